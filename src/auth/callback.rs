//! How the user gets from the authorization URL back to this client.
//!
//! A [`UserAgent`] first settles the redirect URI (so the client can be registered with it),
//! then takes the user to the authorization URL and returns the URL the authorization server
//! redirected back to. Two are here:
//! - [`LoopbackAgent`]: a listener on `127.0.0.1` and `[::1]` (port 17988, path `/callback`,
//!   as `http://localhost:17988/callback`: a browser may take `localhost` to either, so
//!   neither is left for another program to take), the browser opened where possible (never
//!   through a shell) and the URL always shown, and the redirect URL pasted back as the
//!   alternative when the browser cannot reach the listener. Only a redirect carrying the
//!   `state` of the login in progress ends it: any other request (a web page's `<img>`, a
//!   stale tab) is answered and ignored, however many come: a login ends only with its own
//!   redirect, a cancel or its deadline. The listener is bounded: 8 KiB of request head, 5 s
//!   to send it, 16 connections at once, 50 new connections a second (more wait in the
//!   listen queue).
//! - [`HeadlessAgent`]: GETs the authorization URL without following the redirect and takes
//!   the `Location`; for authorization servers that redirect at once (tests, the conformance
//!   suite).

use super::pkce::parse_query;
use super::{AuthError, AuthErrorKind, fetch};
use crate::safe_text::escape_controls;
use crate::secret::Secret;
use crate::transport::BoxFuture;
use crate::transport::http::HttpsClient;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio::task::JoinSet;

/// The redirect URI of the loopback listener.
pub const DEFAULT_REDIRECT_URI: &str = "http://localhost:17988/callback";
/// The loopback listener's port.
pub const CALLBACK_PORT: u16 = 17988;
/// How long a login waits for the user.
pub const LOGIN_TIMEOUT: Duration = Duration::from_secs(300);
/// The largest request head the callback listener reads.
const CALLBACK_HEAD_MAX: usize = 8 * 1024;
/// How long one connection to the callback listener has to send its request.
const CALLBACK_READ_DEADLINE: Duration = Duration::from_secs(5);
/// Connections the callback listener serves at once.
const CALLBACK_CONNECTIONS: usize = 16;
/// Connections the callback listener takes in one second; more wait in the listen queue, so
/// junk from a web page costs a bounded amount of work and never ends the login.
const CALLBACK_RATE: u32 = 50;

/// Takes the user through the authorization request.
///
/// An error ends the login with it: an embedder's agent says why with
/// [`AuthErrorKind::Callback`] (`AuthError::new(AuthErrorKind::Callback { error: None },
/// "...")`), or keeps its own failure whole with [`AuthError::other`].
pub trait UserAgent: Send + Sync {
    /// Settles the redirect URI: `preferred`, or, when `exact` is false and `preferred`
    /// cannot be served, another loopback one. Called before the client is registered.
    fn redirect_uri<'a>(
        &'a self,
        preferred: &'a str,
        exact: bool,
    ) -> BoxFuture<'a, Result<String, AuthError>>;
    /// Takes the user to `url`; returns the full URL the authorization server redirected to.
    fn authorize<'a>(&'a self, url: &'a str) -> BoxFuture<'a, Result<String, AuthError>>;
}

/// What an authorization response carries (RFC 6749 4.1.2, RFC 9207).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct CallbackParams {
    /// The authorization code.
    pub code: Option<Secret>,
    /// The `state` sent with the request.
    pub state: Option<Secret>,
    /// RFC 9207: the issuer that answered.
    pub iss: Option<String>,
    /// An OAuth error code, e.g. `access_denied`.
    pub error: Option<String>,
    /// Its description.
    pub error_description: Option<String>,
}

impl CallbackParams {
    /// Whether these are the answer to the request that sent `state` (any `state` when it is
    /// `None`).
    pub fn answers(&self, state: Option<&str>) -> bool {
        state.is_none_or(|s| self.state.as_ref().is_some_and(|mine| mine.matches(s)))
    }

    /// The OAuth error and its description, `error (description)`, with control characters
    /// escaped (they come from whoever sent the redirect), if there is an error.
    pub fn error_text(&self) -> Option<String> {
        let error = self.error.as_deref()?;
        let description = self
            .error_description
            .as_deref()
            .map(|d| format!(" ({})", escape_controls(d)))
            .unwrap_or_default();
        Some(format!("{}{description}", escape_controls(error)))
    }

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
                "code" => p.code = Some(v.into()),
                "state" => p.state = Some(v.into()),
                "iss" => p.iss = Some(v),
                "error" => p.error = Some(v),
                "error_description" => p.error_description = Some(v),
                _ => {}
            }
        }
        p
    }
}

/// GETs the authorization URL and returns its redirect `Location` without following it:
/// for authorization servers that redirect at once (tests, conformance suites). Made by
/// [`OAuth::headless_agent`](crate::auth::OAuth::headless_agent).
pub struct HeadlessAgent {
    client: HttpsClient,
}

impl HeadlessAgent {
    /// An agent using `client` (see [`crate::transport::http::https_client`]).
    pub(crate) fn new(client: HttpsClient) -> Self {
        HeadlessAgent { client }
    }
}

impl UserAgent for HeadlessAgent {
    fn redirect_uri<'a>(
        &'a self,
        preferred: &'a str,
        _exact: bool,
    ) -> BoxFuture<'a, Result<String, AuthError>> {
        Box::pin(async move { Ok(preferred.to_string()) })
    }
    fn authorize<'a>(&'a self, url: &'a str) -> BoxFuture<'a, Result<String, AuthError>> {
        Box::pin(async move {
            let answer = fetch::get(&self.client, url).await?;
            match (answer.status, answer.location.clone()) {
                (300..=399, Some(location)) => Ok(location),
                _ => Err(callback_error(format!(
                    "the authorization endpoint did not redirect at once ({}); log in with a browser",
                    answer.describe()
                ))),
            }
        })
    }
}

/// A failure of the way back from the authorization server, saying `why`.
fn callback_error(why: String) -> AuthError {
    AuthError::new(AuthErrorKind::Callback { error: None }, why)
}

/// Shows the user the authorization URL (the default prints it to stderr).
pub type ShowUrl = Arc<dyn Fn(&str) + Send + Sync>;

/// The interactive login: a loopback listener, the browser, and paste-back.
pub struct LoopbackAgent {
    /// Open the system browser (`xdg-open`, `open`, or `rundll32` on Windows; only on a URL
    /// that passed the checks).
    pub open_browser: bool,
    /// Shows the authorization URL; always called.
    pub show_url: ShowUrl,
    /// Redirect URLs pasted by the user (a line of stdin, the API, the panel).
    pub paste: Mutex<Option<mpsc::Receiver<String>>>,
    /// How long to wait for the user.
    pub timeout: Duration,
    listener: Mutex<Option<Listening>>,
}

/// The bound callback sockets (127.0.0.1, and [::1] for `localhost`) and the callback path.
struct Listening {
    sockets: Vec<TcpListener>,
    path: String,
}

/// What the default [`LoopbackAgent::show_url`] prints: the URL with any control character
/// escaped (the URL is made of metadata a server sent).
pub fn authorization_prompt(url: &str) -> String {
    format!(
        "Open this URL to log in (if the browser cannot come back here, paste the URL it ends on):\n\n  {}\n",
        escape_controls(url)
    )
}

impl LoopbackAgent {
    /// An agent that opens the browser and prints the URL to stderr.
    pub fn new() -> Self {
        LoopbackAgent {
            open_browser: true,
            show_url: Arc::new(|url| eprintln!("{}", authorization_prompt(url))),
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

/// Binds the callback port on 127.0.0.1 and, for `localhost`, on [::1] too (port 0: a free
/// port, the same on both). A machine without IPv6 loopback listens on 127.0.0.1 alone; an
/// address another program holds is an error that says so.
async fn bind_loopback(host: &str, port: u16) -> Result<Vec<TcpListener>, String> {
    let v4 = TcpListener::bind((Ipv4Addr::LOCALHOST, port))
        .await
        .map_err(|e| format!("cannot listen on 127.0.0.1:{port} ({e})"))?;
    if host != "localhost" {
        return Ok(vec![v4]);
    }
    let port = v4.local_addr().map_err(|e| e.to_string())?.port();
    match TcpListener::bind((Ipv6Addr::LOCALHOST, port)).await {
        Ok(v6) => Ok(vec![v4, v6]),
        Err(e) if e.kind() == std::io::ErrorKind::AddrInUse => Err(format!(
            "another program holds [::1]:{port}, where a browser may send http://localhost:{port} (and with it the login's code)"
        )),
        Err(e) => {
            tracing::debug!("no IPv6 loopback here ({e}); the callback listens on 127.0.0.1 only");
            Ok(vec![v4])
        }
    }
}

impl UserAgent for LoopbackAgent {
    fn redirect_uri<'a>(
        &'a self,
        preferred: &'a str,
        exact: bool,
    ) -> BoxFuture<'a, Result<String, AuthError>> {
        Box::pin(async move {
            let (host, port, path) = loopback_parts(preferred).ok_or_else(|| {
                callback_error(format!("the redirect URI {preferred:?} is not http://localhost:PORT/... or http://127.0.0.1:PORT/...; the loopback listener cannot serve it"))
            })?;
            let sockets = match bind_loopback(&host, port).await {
                Ok(sockets) => sockets,
                Err(e) if !exact => {
                    tracing::info!("{e}; the callback listens on another port");
                    // A free port on 127.0.0.1 may be taken on [::1]: a few tries.
                    let mut outcome = Err(e);
                    for _ in 0..8 {
                        outcome = bind_loopback(&host, 0).await;
                        if outcome.is_ok() {
                            break;
                        }
                    }
                    outcome.map_err(callback_error)?
                }
                Err(e) => {
                    return Err(callback_error(format!(
                        "{e}; the redirect URI {preferred} needs it: stop that program and run the login again"
                    )));
                }
            };
            let actual = sockets[0]
                .local_addr()
                .map_err(|e| callback_error(e.to_string()).caused_by(e))?
                .port();
            let uri = format!("http://{host}:{actual}{path}");
            let addresses = if sockets.len() == 2 {
                "127.0.0.1 and [::1]"
            } else {
                "127.0.0.1"
            };
            tracing::info!(
                "OAuth callback listening on {addresses} port {actual} (loopback only) for {uri}"
            );
            *self.listener.lock().expect("listener lock") = Some(Listening { sockets, path });
            Ok(uri)
        })
    }

    fn authorize<'a>(&'a self, url: &'a str) -> BoxFuture<'a, Result<String, AuthError>> {
        Box::pin(async move {
            // The state this login sent: only a redirect carrying it ends the login.
            let state = CallbackParams::parse(url).state;
            let state = state.as_ref().map(Secret::expose);
            let listening = self.listener.lock().expect("listener lock").take();
            let mut paste = self.paste.lock().expect("paste lock").take();
            (self.show_url)(url);
            if self.open_browser {
                open_browser(url);
            }
            let from_listener = async {
                match listening {
                    Some(listening) => serve_callback(listening, state).await,
                    None => std::future::pending().await,
                }
            };
            let from_paste = async {
                match paste.as_mut() {
                    Some(rx) => loop {
                        match rx.recv().await {
                            Some(line) if line.contains("code=") || line.contains("error=") => {
                                if CallbackParams::parse(&line).answers(state) {
                                    break Ok(line.trim().to_string());
                                }
                                eprintln!(
                                    "That URL is not from this login (its state does not match); paste the URL the browser ended on for this one."
                                );
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
            let redirected = outcome.map_err(|_| {
                callback_error(format!(
                    "no answer from the browser within {} s; run the login again",
                    self.timeout.as_secs()
                ))
            })?;
            redirected.map_err(callback_error)
        })
    }
}

/// The program and arguments that open `url` in the browser on `os` (as in
/// `std::env::consts::OS`): `open` on macOS, `rundll32 url.dll,FileProtocolHandler` on
/// Windows, `xdg-open` elsewhere, with the URL as an argument of its own and no shell
/// between, so nothing in it is read as a command. `None` unless `url` is https, or http on
/// a loopback host.
pub fn browser_command(os: &str, url: &str) -> Option<(&'static str, Vec<String>)> {
    if let Err(e) = fetch::check_url("the authorization URL", url) {
        tracing::warn!("not opening a browser: {e}");
        return None;
    }
    Some(match os {
        "macos" => ("open", vec![url.to_string()]),
        "windows" => (
            "rundll32",
            vec!["url.dll,FileProtocolHandler".into(), url.to_string()],
        ),
        _ => ("xdg-open", vec![url.to_string()]),
    })
}

/// Starts the system browser on `url` ([`browser_command`]), if there is one; failures are
/// only logged.
pub fn open_browser(url: &str) {
    let Some((program, args)) = browser_command(std::env::consts::OS, url) else {
        return;
    };
    let spawned = std::process::Command::new(program)
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
    match spawned {
        Ok(mut child) => {
            std::thread::spawn(move || child.wait());
        }
        Err(e) => tracing::debug!("no browser opened ({program}): {e}"),
    }
}

/// Serves the callback sockets until the redirect that answers `state` arrives, and returns
/// its full URL. Every request is answered: other paths get 404, redirects of another login
/// (wrong or missing `state`, errors included) 400, and are otherwise ignored. Connections
/// are served side by side, each bounded in size and time, and taken at a bounded rate.
async fn serve_callback(listening: Listening, state: Option<&str>) -> Result<String, String> {
    let (tx, mut rx) = mpsc::channel::<TcpStream>(CALLBACK_CONNECTIONS);
    let mut acceptors = JoinSet::new();
    for socket in listening.sockets {
        let tx = tx.clone();
        acceptors.spawn(async move {
            loop {
                match socket.accept().await {
                    Ok((stream, _)) => {
                        if tx.send(stream).await.is_err() {
                            break;
                        }
                    }
                    Err(e) => {
                        // Out of file descriptors, say: pause instead of spinning.
                        tracing::debug!("the callback listener could not accept: {e}");
                        tokio::time::sleep(Duration::from_millis(100)).await;
                    }
                }
            }
        });
    }
    drop(tx);
    let path: Arc<str> = listening.path.into();
    let state: Option<Arc<str>> = state.map(Into::into);
    let mut connections = JoinSet::new();
    // Connections taken in the current second, and when it ends.
    let (mut taken, mut second_ends) = (0, tokio::time::Instant::now() + Duration::from_secs(1));
    loop {
        let room = connections.len() < CALLBACK_CONNECTIONS && taken < CALLBACK_RATE;
        tokio::select! {
            Some(stream) = rx.recv(), if room => {
                taken += 1;
                connections.spawn(answer_callback(stream, path.clone(), state.clone()));
            }
            () = tokio::time::sleep_until(second_ends), if taken >= CALLBACK_RATE => {}
            Some(done) = connections.join_next() => {
                if let Ok(Some(url)) = done {
                    return Ok(url);
                }
            }
            else => return Err("the callback listener stopped".into()),
        }
        let now = tokio::time::Instant::now();
        if now >= second_ends {
            (taken, second_ends) = (0, now + Duration::from_secs(1));
        }
    }
}

/// Reads one request and answers it; returns its URL when it is the redirect of this login.
async fn answer_callback(
    mut stream: TcpStream,
    path: Arc<str>,
    state: Option<Arc<str>>,
) -> Option<String> {
    let head = tokio::time::timeout(CALLBACK_READ_DEADLINE, read_head(&mut stream)).await;
    let (status, page, redirect) = match head {
        Err(_) | Ok(Err(None)) => return None,
        Ok(Err(Some(too_large))) => (too_large, "The request is too large.\n".to_string(), None),
        Ok(Ok(head)) => judge_callback(&head, &path, state.as_deref()),
    };
    let _ = tokio::time::timeout(CALLBACK_READ_DEADLINE, respond(&mut stream, status, &page)).await;
    redirect
}

/// The request head (up to its blank line). `Err(None)`: the peer closed first;
/// `Err(Some(status))`: over [`CALLBACK_HEAD_MAX`] bytes.
pub(crate) async fn read_head(stream: &mut TcpStream) -> Result<String, Option<&'static str>> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 2048];
    loop {
        let end = buf.windows(4).position(|w| w == b"\r\n\r\n");
        if end.unwrap_or(buf.len()) > CALLBACK_HEAD_MAX {
            return Err(Some("431 Request Header Fields Too Large"));
        }
        if let Some(end) = end {
            return Ok(String::from_utf8_lossy(&buf[..end]).into_owned());
        }
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => return Err(None),
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
}

/// What to answer a request head: status, page, and the redirect URL when it ends the login.
pub(crate) fn judge_callback(
    head: &str,
    path: &str,
    state: Option<&str>,
) -> (&'static str, String, Option<String>) {
    let target = head.lines().next().and_then(|l| {
        let mut parts = l.split_whitespace();
        match (parts.next(), parts.next()) {
            (Some("GET"), Some(t)) => Some(t),
            _ => None,
        }
    });
    let Some(target) = target.filter(|t| t.split('?').next() == Some(path)) else {
        return ("404 Not Found", "Not found.\n".into(), None);
    };
    let params = CallbackParams::parse(target);
    if !params.answers(state) {
        return (
            "400 Bad Request",
            "This is not the redirect of the login in progress (its state does not match), so it was ignored.\n".into(),
            None,
        );
    }
    let page = match (&params.code, &params.error) {
        (_, Some(_)) => format!(
            "Login failed: {}.\nYou can close this tab; the terminal says what to do next.\n",
            params.error_text().unwrap_or_default()
        ),
        (Some(_), None) => "Login finished. You can close this tab and return to agenvoy.\n".into(),
        (None, None) => {
            return (
                "400 Bad Request",
                "This is the OAuth callback; it needs a code or an error.\n".into(),
                None,
            );
        }
    };
    let status = if params.error.is_some() {
        "400 Bad Request"
    } else {
        "200 OK"
    };
    (status, page, Some(format!("http://localhost{target}")))
}

async fn respond(stream: &mut TcpStream, status: &str, body: &str) -> std::io::Result<()> {
    let response = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(response.as_bytes()).await?;
    stream.shutdown().await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redirect_urls_are_read() {
        let p = CallbackParams::parse(
            "http://localhost:17988/callback?code=abc%2Fd&state=s1&iss=https%3A%2F%2Fa.test",
        );
        assert_eq!(p.code.as_ref().map(Secret::expose), Some("abc/d"));
        assert_eq!(p.state.as_ref().map(Secret::expose), Some("s1"));
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

    fn quiet_agent() -> LoopbackAgent {
        LoopbackAgent {
            open_browser: false,
            show_url: Arc::new(|_| {}),
            ..LoopbackAgent::new()
        }
    }

    /// A free-port listener for `localhost`, and its port.
    async fn listening(agent: &LoopbackAgent) -> u16 {
        let uri = agent
            .redirect_uri("http://localhost:0/callback", true)
            .await
            .unwrap();
        let port = loopback_parts(&uri).unwrap().1;
        assert_ne!(port, 0);
        port
    }

    /// Sends `request` raw to `address` and returns the whole answer.
    async fn send(address: (&str, u16), request: &str) -> String {
        let mut s = tokio::net::TcpStream::connect(address).await.unwrap();
        s.write_all(request.as_bytes()).await.unwrap();
        let mut out = String::new();
        let _ = s.read_to_string(&mut out).await;
        out
    }

    fn get(target: &str) -> String {
        format!("GET {target} HTTP/1.1\r\nHost: localhost\r\n\r\n")
    }

    #[tokio::test]
    async fn the_listener_answers_the_callback_and_ignores_other_paths() {
        let agent = quiet_agent();
        let port = listening(&agent).await;
        let hit = async move {
            let favicon = send(("127.0.0.1", port), &get("/favicon.ico")).await;
            assert!(favicon.starts_with("HTTP/1.1 404"), "{favicon}");
            send(("127.0.0.1", port), &get("/callback?code=c1&state=s1")).await
        };
        let (url, page) = tokio::join!(agent.authorize("http://as.test/authorize?state=s1"), hit);
        assert_eq!(url.unwrap(), "http://localhost/callback?code=c1&state=s1");
        assert!(page.starts_with("HTTP/1.1 200"), "{page}");
        assert!(page.contains("Login finished"), "{page}");
    }

    #[tokio::test]
    async fn forged_callbacks_are_answered_and_ignored() {
        let agent = quiet_agent();
        let port = listening(&agent).await;
        let forge = async move {
            for target in [
                "/callback?code=forged&state=other",
                "/callback?code=forged",
                "/callback?error=access_denied&error_description=%1B%5B2J",
                "/callback?error=access_denied&state=other",
            ] {
                let page = send(("127.0.0.1", port), &get(target)).await;
                assert!(page.starts_with("HTTP/1.1 400"), "{target}: {page}");
                assert!(page.contains("its state does not match"), "{page}");
            }
            send(("127.0.0.1", port), &get("/callback?code=real&state=S1")).await
        };
        let (url, page) = tokio::join!(
            agent.authorize("https://as.test/authorize?client_id=x&state=S1&scope=a"),
            forge
        );
        assert_eq!(url.unwrap(), "http://localhost/callback?code=real&state=S1");
        assert!(page.starts_with("HTTP/1.1 200"), "{page}");
    }

    #[tokio::test]
    async fn localhost_is_served_on_both_loopback_addresses() {
        let agent = quiet_agent();
        let port = listening(&agent).await;
        let request = get("/callback?code=v6&state=S");
        let hit = send(("::1", port), &request);
        let (url, page) = tokio::join!(agent.authorize("https://as.test/a?state=S"), hit);
        assert_eq!(url.unwrap(), "http://localhost/callback?code=v6&state=S");
        assert!(page.starts_with("HTTP/1.1 200"), "{page}");
    }

    #[tokio::test]
    async fn a_loopback_address_held_by_another_program_is_reported() {
        // Another program on [::1] at a port free on 127.0.0.1.
        let other = TcpListener::bind((Ipv6Addr::LOCALHOST, 0)).await.unwrap();
        let port = other.local_addr().unwrap().port();
        let wanted = format!("http://localhost:{port}/callback");
        let err = quiet_agent().redirect_uri(&wanted, true).await.unwrap_err();
        assert_eq!(err.kind(), &AuthErrorKind::Callback { error: None });
        let err = err.to_string();
        assert!(
            err.contains(&format!("another program holds [::1]:{port}")),
            "{err}"
        );
        // A dynamically registered client moves to a port free on both.
        let agent = quiet_agent();
        let uri = agent.redirect_uri(&wanted, false).await.unwrap();
        let moved = loopback_parts(&uri).unwrap().1;
        assert_ne!(moved, port);
        assert!(
            TcpListener::bind((Ipv6Addr::LOCALHOST, moved))
                .await
                .is_err()
        );
        // 127.0.0.1 in the redirect URI: only that address is needed.
        let uri = quiet_agent()
            .redirect_uri(&format!("http://127.0.0.1:{port}/callback"), true)
            .await
            .unwrap();
        assert_eq!(uri, format!("http://127.0.0.1:{port}/callback"));
    }

    #[tokio::test]
    async fn slow_and_oversized_requests_are_cut_off_without_holding_others_up() {
        let agent = LoopbackAgent {
            timeout: Duration::from_secs(10),
            ..quiet_agent()
        };
        let port = listening(&agent).await;
        let hit = async move {
            // Connections that send nothing, all but one of the slots.
            let mut silent = Vec::new();
            for _ in 1..CALLBACK_CONNECTIONS {
                silent.push(
                    tokio::net::TcpStream::connect(("127.0.0.1", port))
                        .await
                        .unwrap(),
                );
            }
            let started = std::time::Instant::now();
            let big = format!(
                "GET /callback?x={} HTTP/1.1\r\n\r\n",
                "a".repeat(CALLBACK_HEAD_MAX)
            );
            let page = send(("127.0.0.1", port), &big).await;
            assert!(page.starts_with("HTTP/1.1 431"), "{page}");
            assert!(
                started.elapsed() < Duration::from_secs(2),
                "served beside the silent ones"
            );
            // The silent ones are closed at their deadline.
            let mut rest = Vec::new();
            let closed = silent[0].read_to_end(&mut rest).await;
            assert!(matches!(closed, Ok(0)), "{closed:?}");
            let waited = started.elapsed();
            assert!(
                waited > CALLBACK_READ_DEADLINE - Duration::from_secs(1)
                    && waited < CALLBACK_READ_DEADLINE + Duration::from_secs(2),
                "{waited:?}"
            );
            send(("127.0.0.1", port), &get("/callback?code=c&state=S")).await
        };
        let (url, page) = tokio::join!(agent.authorize("https://as.test/a?state=S"), hit);
        assert_eq!(url.unwrap(), "http://localhost/callback?code=c&state=S");
        assert!(page.starts_with("HTTP/1.1 200"), "{page}");
    }

    /// A web page's hundred `<img>`s (and more) at the callback are answered and ignored:
    /// the login goes on, and ends with its own redirect.
    #[tokio::test]
    async fn junk_at_the_listener_never_ends_the_login() {
        let agent = LoopbackAgent {
            timeout: Duration::from_secs(20),
            ..quiet_agent()
        };
        let port = listening(&agent).await;
        let flood = async move {
            let junk = (0..150).map(|i| async move {
                let target = if i % 2 == 0 {
                    "/x"
                } else {
                    "/callback?code=x&state=other"
                };
                send(("127.0.0.1", port), &get(target)).await
            });
            for page in futures::future::join_all(junk).await {
                assert!(page.starts_with("HTTP/1.1 4"), "{page}");
            }
            send(("127.0.0.1", port), &get("/callback?code=real&state=S")).await
        };
        let (outcome, page) = tokio::join!(agent.authorize("https://as.test/a?state=S"), flood);
        assert_eq!(
            outcome.unwrap(),
            "http://localhost/callback?code=real&state=S"
        );
        assert!(page.starts_with("HTTP/1.1 200"), "{page}");
    }

    #[tokio::test]
    async fn a_pasted_url_finishes_the_login() {
        let (tx, rx) = mpsc::channel(4);
        let agent = quiet_agent().with_paste(rx);
        agent
            .redirect_uri("http://localhost:0/callback", false)
            .await
            .unwrap();
        tx.send("not it".into()).await.unwrap();
        tx.send("http://localhost:17988/callback?code=old&state=other".into())
            .await
            .unwrap();
        tx.send(" http://localhost:17988/callback?code=p&state=s \n".into())
            .await
            .unwrap();
        let url = agent
            .authorize("http://as.test/authorize?state=s")
            .await
            .unwrap();
        assert_eq!(
            CallbackParams::parse(&url)
                .code
                .as_ref()
                .map(Secret::expose),
            Some("p")
        );
    }

    #[test]
    fn the_browser_is_opened_without_a_shell_and_only_on_web_urls() {
        let url = "https://as.test/authorize?a=1&b=%22x%22&state=s";
        for (os, program, args) in [
            ("linux", "xdg-open", vec![url]),
            ("freebsd", "xdg-open", vec![url]),
            ("macos", "open", vec![url]),
            (
                "windows",
                "rundll32",
                vec!["url.dll,FileProtocolHandler", url],
            ),
        ] {
            let (p, a) = browser_command(os, url).unwrap();
            assert_eq!(
                (p, a.iter().map(String::as_str).collect::<Vec<_>>()),
                (program, args)
            );
        }
        for bad in [
            "file:///etc/passwd#https://as.test",
            "javascript:alert(1)",
            "http://192.0.2.1/authorize",
            "calc.exe",
        ] {
            assert_eq!(browser_command("windows", bad), None, "{bad}");
            assert_eq!(browser_command("linux", bad), None, "{bad}");
        }
        assert!(browser_command("linux", "http://127.0.0.1:1/authorize").is_some());
    }

    #[test]
    fn the_printed_url_shows_control_characters_escaped() {
        let prompt = authorization_prompt("https://as.test/a\u{1b}]0;x\u{7}?b=\u{9b}2J");
        assert!(
            prompt.contains("https://as.test/a\\u{1b}]0;x\\u{7}?b=\\u{9b}2J"),
            "{prompt}"
        );
        assert!(!prompt.trim().chars().any(|c| c.is_control() && c != '\n'));
    }
}
