//! Not part of the API: the layers below [`Client`](crate::Client) (wire, transport,
//! protocol, the client module, the error module, terminal text), as the `agenvoy-mcp`
//! binary, the tests, the benches and the fuzz targets use them. Anything here may change in
//! any release, without notice: embedders use what the crate root, [`crate::host`],
//! `auth`, `api` and `tui` export.

#[path = "client.rs"]
pub mod client;
#[path = "error.rs"]
pub mod error;
#[path = "protocol/mod.rs"]
pub mod protocol;
#[path = "text.rs"]
pub mod text;
#[path = "transport/mod.rs"]
pub mod transport;
#[path = "wire/mod.rs"]
pub mod wire;

/// Entry points for the fuzz targets (`fuzz/`) into checks that are private elsewhere.
pub mod fuzz {
    #[cfg(feature = "oauth")]
    use crate::auth::{AuthServerMetadata, ProtectedResource, discovery, fetch};

    /// `fetch::check_url`: https, or http on a loopback host.
    #[cfg(feature = "oauth")]
    pub fn check_url(url: &str) -> Result<(), String> {
        fetch::check_url("the URL", url).map(drop)
    }

    /// Discovery's check of protected resource metadata for the server at `server_url`:
    /// the resource to send and the issuer to ask.
    #[cfg(feature = "oauth")]
    pub fn check_protected_resource(
        prm: &ProtectedResource,
        server_url: &str,
    ) -> Result<(String, String), String> {
        discovery::check_protected_resource(prm, server_url)
    }

    /// Discovery's check of authorization server metadata fetched from `url` for `issuer`.
    #[cfg(feature = "oauth")]
    pub fn check_metadata(
        meta: &AuthServerMetadata,
        issuer: &str,
        url: &str,
    ) -> Result<(), String> {
        discovery::check_metadata(meta, issuer, url)
    }

    /// The same for metadata on the MCP server's origin `base` (the 2025-03-26 rules).
    #[cfg(feature = "oauth")]
    pub fn check_legacy_metadata(
        meta: &AuthServerMetadata,
        base: &str,
        url: &str,
    ) -> Result<(), String> {
        discovery::check_legacy_metadata(meta, base, url)
    }

    /// The management API's reading of one request (route, query, JSON body and members),
    /// without acting on it; a refusal as (status, type, message).
    #[cfg(feature = "api")]
    pub fn api_request(
        method: &str,
        path: &str,
        query: &str,
        body: &[u8],
    ) -> Result<(), (u16, &'static str, String)> {
        let method = hyper::Method::from_bytes(method.as_bytes())
            .map_err(|_| (400, "invalid_request", "not an HTTP method".to_string()))?;
        crate::api::read_request(&method, path, query, body).map_err(|e| e.into_parts())
    }

    /// The management API's request guard (`Host`, `Origin`, bearer token) on a request
    /// with these headers, for an API on `port` whose token is `token`; a refusal as (status,
    /// type, message).
    #[cfg(feature = "api")]
    pub fn api_admit(
        headers: &[(&str, &[u8])],
        token: &str,
        port: u16,
        allow_remote: bool,
    ) -> Result<(), (u16, &'static str, String)> {
        let token = crate::api::ApiToken::new(token)
            .map_err(|e| (500, "token", format!("not a token: {e}")))?;
        let mut request = hyper::Request::builder().uri("/v1/mcp/status");
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let Ok(request) = request.body(()) else {
            return Err((400, "invalid_request", "not an HTTP request head".into()));
        };
        let (parts, ()) = request.into_parts();
        crate::api::admit(&parts, &token, port, allow_remote).map_err(|e| e.into_parts())
    }

    /// The legacy (HTTP+SSE) transport's reading of an `endpoint` event from the server at
    /// `base`: the URL to POST to, or why it is refused (not a URL, another origin).
    #[cfg(feature = "http")]
    pub fn legacy_endpoint(base: &str, endpoint: &str) -> Result<String, String> {
        let base: hyper::Uri = base
            .parse()
            .map_err(|_| "the base is not a URL".to_string())?;
        crate::transport::http::endpoint_on_origin(&base, endpoint).map(|u| u.to_string())
    }
}
