//! The hyper client every HTTP exchange uses.

use super::proxy::{self, ProxyServer, Routes};
use super::*;
use crate::error::chain_text;
use crate::proxy::Proxy;
use hyper::http::uri::Scheme;
use hyper_util::rt::TokioIo;

/// The hyper client every HTTP exchange of this crate uses: HTTP/1.1 and HTTP/2, rustls with
/// the ring provider and the OS trust store, through the server's proxy if it has one; it
/// follows no redirect by itself.
#[derive(Clone)]
pub struct HttpsClient {
    hyper: HyperClient<Connector, Full<Bytes>>,
    routes: Arc<Routes>,
}

/// Builds a [`HttpsClient`] whose connections go through `proxy` (the environment is read
/// here, once); `server` names the server in the warning when no OS trust store is found.
/// The trust store is read at the process's first `https` connection, not here: reading it
/// is most of a plain-HTTP client's start (about 18 million instructions).
pub fn https_client(server: &str, connect_timeout: Duration, proxy: &Proxy) -> HttpsClient {
    let mut http = HttpConnector::new();
    http.set_connect_timeout(Some(connect_timeout));
    // Small requests and answers must not wait for a delayed ACK.
    http.set_nodelay(true);
    http.enforce_http(false);
    let routes = Arc::new(Routes::new(proxy));
    let connector = Connector {
        http,
        server: server.into(),
        routes: routes.clone(),
        connect_timeout,
    };
    HttpsClient {
        hyper: HyperClient::builder(TokioExecutor::new()).build(connector),
        routes,
    }
}

impl HttpsClient {
    /// Sends `request`; one to an `http` URL through a proxy carries the proxy's
    /// credentials (an `https` one sends them in the tunnel's `CONNECT` instead) and
    /// `Connection: close`: a proxy may close a connection after any answer without saying
    /// so (tinyproxy does), and a POST cut so cannot be sent again. A connection per
    /// request costs a handshake with a nearby proxy; `https` tunnels are kept.
    pub fn request(
        &self,
        mut request: Request<Full<Bytes>>,
    ) -> hyper_util::client::legacy::ResponseFuture {
        let proxied = match self.routes.route(request.uri()) {
            Ok(Some(proxy)) if request.uri().scheme() != Some(&Scheme::HTTPS) => Some(proxy),
            _ => None,
        };
        if let Some(proxy) = proxied {
            let headers = request.headers_mut();
            headers.insert(header::CONNECTION, HeaderValue::from_static("close"));
            let authorization = proxy.authorization.as_ref();
            if let Some(Ok(mut value)) = authorization.map(|a| HeaderValue::from_str(a.expose())) {
                value.set_sensitive(true);
                headers.insert(header::PROXY_AUTHORIZATION, value);
            }
        }
        self.hyper.request(request)
    }

    /// What an answer `status` to a request for `uri` means when it is the proxy's
    /// refusal (407 to an `http` URL sent through a proxy); `None` otherwise.
    pub(crate) fn proxy_refusal(&self, uri: &Uri, status: StatusCode) -> Option<String> {
        if status != StatusCode::PROXY_AUTHENTICATION_REQUIRED
            || uri.scheme() == Some(&Scheme::HTTPS)
        {
            return None;
        }
        let proxy = self.routes.route(uri).ok().flatten()?;
        Some(proxy::refusal(proxy, status.as_u16()))
    }

    /// Whether the proxy setting that applies to `uri` can be used; why not.
    pub(crate) fn check_route(&self, uri: &Uri) -> Result<(), String> {
        self.routes.route(uri).map(|_| ())
    }
}

/// The TLS settings of every `https` connection of the process: read once, at the first.
fn tls_config(server: &str) -> Arc<rustls::ClientConfig> {
    static CONFIG: std::sync::OnceLock<Arc<rustls::ClientConfig>> = std::sync::OnceLock::new();
    CONFIG
        .get_or_init(|| {
            let builder = rustls::ClientConfig::builder_with_provider(Arc::new(
                rustls::crypto::ring::default_provider(),
            ))
            .with_safe_default_protocol_versions()
            .expect("ring supports the default TLS versions");
            let found = rustls_native_certs::load_native_certs();
            let mut roots = rustls::RootCertStore::empty();
            let (added, _) = roots.add_parsable_certificates(found.certs);
            if added == 0 {
                let why = found
                    .errors
                    .first()
                    .map_or_else(|| "no certificates".to_string(), ToString::to_string);
                tracing::warn!(
                    server = %server,
                    "no usable OS trust store ({why}); https servers will fail to verify"
                );
            }
            let mut config = builder.with_root_certificates(roots).with_no_client_auth();
            config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
            Arc::new(config)
        })
        .clone()
}

/// Plain TCP for `http` URLs, rustls for `https` ones (see [`tls_config`]); through the
/// proxy of [`Routes`]: a `CONNECT` tunnel for `https`, absolute-form requests for `http`.
#[derive(Clone)]
pub struct Connector {
    http: HttpConnector,
    server: Arc<str>,
    routes: Arc<Routes>,
    connect_timeout: Duration,
}

/// What a [`Connector`] connects: a TCP or TLS stream, and whether it goes to a proxy that
/// takes absolute-form requests (hyper then writes the whole URL in the request line).
pub struct Connection {
    stream: Stream,
    proxied: bool,
}

type Stream = hyper_rustls::MaybeHttpsStream<TokioIo<tokio::net::TcpStream>>;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

type Connecting<T> =
    std::pin::Pin<Box<dyn std::future::Future<Output = std::result::Result<T, BoxError>> + Send>>;

impl tower_service::Service<Uri> for Connector {
    type Response = Connection;
    type Error = BoxError;
    type Future = Connecting<Connection>;

    fn poll_ready(
        &mut self,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::result::Result<(), BoxError>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn call(&mut self, uri: Uri) -> Self::Future {
        let mut http = self.http.clone();
        let proxy = match self.routes.route(&uri) {
            Ok(proxy) => proxy.cloned(),
            Err(why) => return Box::pin(async move { Err(why.into()) }),
        };
        let secure = uri.scheme() == Some(&Scheme::HTTPS);
        match (proxy, secure) {
            (None, false) => Box::pin(async move {
                let stream = tower_service::Service::call(&mut http, uri).await?;
                Ok(Connection::new(Stream::Http(stream), false))
            }),
            (Some(proxy), false) => Box::pin(async move {
                let stream = tower_service::Service::call(&mut http, proxy.address.clone())
                    .await
                    .map_err(|e| format!("proxy {}: {}", proxy.shown, chain_text(&e)))?;
                Ok(Connection::new(Stream::Http(stream), true))
            }),
            (None, true) => {
                let mut https =
                    hyper_rustls::HttpsConnector::from((http, tls_config(&self.server)));
                Box::pin(async move {
                    let stream = tower_service::Service::call(&mut https, uri).await?;
                    Ok(Connection::new(stream, false))
                })
            }
            (Some(proxy), true) => {
                let tunnel = Tunnel {
                    http,
                    proxy,
                    timeout: self.connect_timeout,
                };
                let mut https =
                    hyper_rustls::HttpsConnector::from((tunnel, tls_config(&self.server)));
                Box::pin(async move {
                    let stream = tower_service::Service::call(&mut https, uri).await?;
                    Ok(Connection::new(stream, false))
                })
            }
        }
    }
}

/// The TCP connection under TLS for an `https` URL behind a proxy: to the proxy, then a
/// `CONNECT` tunnel to the origin, both within the connect timeout. TLS then runs to the
/// origin over it (its name in SNI, its certificate checked).
#[derive(Clone)]
struct Tunnel {
    http: HttpConnector,
    proxy: ProxyServer,
    timeout: Duration,
}

impl tower_service::Service<Uri> for Tunnel {
    type Response = TokioIo<tokio::net::TcpStream>;
    type Error = BoxError;
    type Future = Connecting<Self::Response>;

    fn poll_ready(
        &mut self,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::result::Result<(), BoxError>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn call(&mut self, uri: Uri) -> Self::Future {
        let Tunnel {
            mut http,
            proxy,
            timeout,
        } = self.clone();
        Box::pin(async move {
            let host = uri.host().unwrap_or_default();
            let target = format!("{host}:{}", uri.port_u16().unwrap_or(443));
            let open = async {
                let stream = tower_service::Service::call(&mut http, proxy.address.clone())
                    .await
                    .map_err(|e| format!("proxy {}: {}", proxy.shown, chain_text(&e)))?;
                let mut stream = stream.into_inner();
                proxy::open_tunnel(&mut stream, &proxy, &target).await?;
                Ok::<_, String>(TokioIo::new(stream))
            };
            match tokio::time::timeout(timeout, open).await {
                Ok(opened) => Ok(opened?),
                Err(_) => Err(format!(
                    "proxy {}: no tunnel to {target} within {:.1} s",
                    proxy.shown,
                    timeout.as_secs_f64()
                )
                .into()),
            }
        })
    }
}

impl Connection {
    fn new(stream: Stream, proxied: bool) -> Connection {
        Connection { stream, proxied }
    }
}

impl hyper_util::client::legacy::connect::Connection for Connection {
    fn connected(&self) -> hyper_util::client::legacy::connect::Connected {
        self.stream.connected().proxy(self.proxied)
    }
}

impl hyper::rt::Read for Connection {
    fn poll_read(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: hyper::rt::ReadBufCursor<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.get_mut().stream).poll_read(cx, buf)
    }
}

impl hyper::rt::Write for Connection {
    fn poll_write(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        std::pin::Pin::new(&mut self.get_mut().stream).poll_write(cx, buf)
    }

    fn poll_flush(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.get_mut().stream).poll_flush(cx)
    }

    fn poll_shutdown(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.get_mut().stream).poll_shutdown(cx)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_write_vectored(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> std::task::Poll<std::io::Result<usize>> {
        std::pin::Pin::new(&mut self.get_mut().stream).poll_write_vectored(cx, bufs)
    }
}

/// What [`raw_exchange`] got: the status, every header (names in lower case) and the body,
/// as far as it was read.
#[derive(Debug, Clone)]
pub struct RawAnswer {
    /// The status code.
    pub status: u16,
    /// Every header, in the order sent, names in lower case.
    pub headers: Vec<(String, String)>,
    /// The body: all of it, or what came within the read time and [`RAW_BODY_MAX`].
    pub body: Vec<u8>,
}

impl RawAnswer {
    /// The first value of the header `name` (lower case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// The most of a body [`raw_exchange`] reads.
pub const RAW_BODY_MAX: usize = 1 << 20;

/// One HTTP exchange as written, for `agenvoy-mcp check`, which tests a server's answers to
/// requests no transport of this crate would send: `method` to `url` with exactly these
/// headers and body. The answer's head must come within `wait`; its body is read until it
/// ends, [`RAW_BODY_MAX`], or `body_wait` from the head (a stream that stays open is cut
/// there).
pub async fn raw_exchange(
    client: &HttpsClient,
    method: &str,
    url: &str,
    headers: &[(&str, &str)],
    body: Vec<u8>,
    wait: Duration,
    body_wait: Duration,
) -> std::result::Result<RawAnswer, String> {
    let uri: Uri = url.parse().map_err(|e| format!("{url}: {e}"))?;
    let mut request = Request::new(Full::new(Bytes::from(body)));
    *request.method_mut() = Method::from_bytes(method.as_bytes()).map_err(|e| e.to_string())?;
    *request.uri_mut() = uri;
    for (name, value) in headers {
        let name = HeaderName::from_bytes(name.as_bytes()).map_err(|e| e.to_string())?;
        let value = HeaderValue::from_str(value).map_err(|e| e.to_string())?;
        request.headers_mut().append(name, value);
    }
    let response = tokio::time::timeout(wait, client.request(request))
        .await
        .map_err(|_| format!("{url}: no answer within {} s", wait.as_secs_f64()))?
        .map_err(|e| format!("{url}: {}", chain_text(&e)))?;
    let status = response.status().as_u16();
    let headers = response
        .headers()
        .iter()
        .map(|(n, v)| {
            let value = String::from_utf8_lossy(v.as_bytes()).into_owned();
            (n.as_str().to_string(), value)
        })
        .collect();
    let mut incoming = response.into_body();
    let mut body = Vec::new();
    let deadline = tokio::time::Instant::now() + body_wait;
    while body.len() < RAW_BODY_MAX {
        match tokio::time::timeout_at(deadline, incoming.frame()).await {
            Ok(Some(Ok(frame))) => {
                if let Ok(chunk) = frame.into_data() {
                    body.extend_from_slice(&chunk);
                }
            }
            Ok(Some(Err(e))) => return Err(format!("{url}: reading the body: {e}")),
            Ok(None) | Err(_) => break,
        }
    }
    body.truncate(RAW_BODY_MAX);
    Ok(RawAnswer {
        status,
        headers,
        body,
    })
}
