//! The hyper client every HTTP exchange uses.

use super::*;

/// The hyper client every HTTP exchange of this crate uses: HTTP/1.1 and HTTP/2, rustls with
/// the ring provider and the OS trust store; it follows no redirect by itself.
pub type HttpsClient = HyperClient<hyper_rustls::HttpsConnector<HttpConnector>, Full<Bytes>>;

/// Builds a [`HttpsClient`]; `server` names the server in the warning when no OS trust store is found.
pub fn https_client(server: &str, connect_timeout: Duration) -> HttpsClient {
    let mut http = HttpConnector::new();
    http.set_connect_timeout(Some(connect_timeout));
    // Small requests and answers must not wait for a delayed ACK.
    http.set_nodelay(true);
    http.enforce_http(false);
    let provider = rustls::crypto::ring::default_provider();
    let builder =
        match hyper_rustls::HttpsConnectorBuilder::new().with_provider_and_native_roots(provider) {
            Ok(b) => b,
            Err(e) => {
                tracing::warn!(
                    server = %server,
                    "no usable OS trust store ({e}); https servers will fail to verify"
                );
                let tls = rustls::ClientConfig::builder_with_provider(Arc::new(
                    rustls::crypto::ring::default_provider(),
                ))
                .with_safe_default_protocol_versions()
                .expect("ring supports the default TLS versions")
                .with_root_certificates(rustls::RootCertStore::empty())
                .with_no_client_auth();
                hyper_rustls::HttpsConnectorBuilder::new().with_tls_config(tls)
            }
        };
    let https = builder
        .https_or_http()
        .enable_http1()
        .enable_http2()
        .wrap_connector(http);
    HyperClient::builder(TokioExecutor::new()).build(https)
}
