//! The hyper client every HTTP exchange uses.

use super::*;

/// The hyper client every HTTP exchange of this crate uses: HTTP/1.1 and HTTP/2, rustls with
/// the ring provider and the OS trust store; it follows no redirect by itself.
pub type HttpsClient = HyperClient<Connector, Full<Bytes>>;

/// Builds a [`HttpsClient`]; `server` names the server in the warning when no OS trust store is
/// found. The trust store is read at the process's first `https` connection, not here: reading
/// it is most of a plain-HTTP client's start (about 18 million instructions).
pub fn https_client(server: &str, connect_timeout: Duration) -> HttpsClient {
    let mut http = HttpConnector::new();
    http.set_connect_timeout(Some(connect_timeout));
    // Small requests and answers must not wait for a delayed ACK.
    http.set_nodelay(true);
    http.enforce_http(false);
    let connector = Connector {
        http,
        server: server.into(),
    };
    HyperClient::builder(TokioExecutor::new()).build(connector)
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

/// Plain TCP for `http` URLs, rustls for `https` ones (see [`tls_config`]).
#[derive(Clone)]
pub struct Connector {
    http: HttpConnector,
    server: Arc<str>,
}

/// What a [`Connector`] connects.
pub type Connection =
    hyper_rustls::MaybeHttpsStream<hyper_util::rt::TokioIo<tokio::net::TcpStream>>;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

impl tower_service::Service<Uri> for Connector {
    type Response = Connection;
    type Error = BoxError;
    type Future = std::pin::Pin<
        Box<dyn std::future::Future<Output = std::result::Result<Connection, BoxError>> + Send>,
    >;

    fn poll_ready(
        &mut self,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::result::Result<(), BoxError>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn call(&mut self, uri: Uri) -> Self::Future {
        let mut http = self.http.clone();
        if uri.scheme() != Some(&hyper::http::uri::Scheme::HTTPS) {
            return Box::pin(async move {
                let stream = tower_service::Service::call(&mut http, uri).await?;
                Ok(hyper_rustls::MaybeHttpsStream::Http(stream))
            });
        }
        let mut https = hyper_rustls::HttpsConnector::from((http, tls_config(&self.server)));
        Box::pin(async move { tower_service::Service::call(&mut https, uri).await })
    }
}
