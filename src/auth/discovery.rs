//! Finding the authorization server of an MCP server.
//!
//! 1. Protected resource metadata (RFC 9728): the `resource_metadata` URL of the
//!    `WWW-Authenticate` challenge, then the path-based well-known URL
//!    (`/.well-known/oauth-protected-resource/<path>`), then the root one.
//! 2. Its `resource` must name this server (same origin, and the server's path at or under
//!    the resource's path); otherwise the login is refused. The first of its
//!    `authorization_servers` is used.
//! 3. Authorization server metadata, in the order of the MCP specification (2025-11-25): for an
//!    issuer with a path `/p`: `/.well-known/oauth-authorization-server/p`,
//!    `/.well-known/openid-configuration/p`, `/p/.well-known/openid-configuration`; without a
//!    path: `/.well-known/oauth-authorization-server`, `/.well-known/openid-configuration`.
//!    The metadata's `issuer` must be the issuer asked for (RFC 8414 section 3.3).
//! 4. Without protected resource metadata, the 2025-03-26 rules: the authorization server is
//!    the MCP server's origin; its metadata is at `/.well-known/oauth-authorization-server`
//!    there, and without it the endpoints are `/authorize`, `/token` and `/register`. The
//!    metadata's `issuer` must be on that origin (see [`legacy_issuer_matches`]), so a server
//!    cannot claim another authorization server's issuer and with it the client registered
//!    there.
//!
//! Every issuer and endpoint must be `https`, or `http` on a loopback host
//! (`fetch::check_url`), before anything is fetched from it or opened in a browser.

use super::{AuthError, AuthErrorKind, fetch};
use crate::transport::http::HttpsClient;
use hyper::Uri;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The parameters of a `Bearer` or `DPoP` challenge (`WWW-Authenticate`, RFC 6750, RFC 9449
/// section 7.1 and RFC 9728).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Challenge {
    /// `resource_metadata`: where the protected resource metadata is.
    pub resource_metadata: Option<String>,
    /// `scope`: the scopes the request needs, space-separated.
    pub scope: Option<String>,
    /// `error`, e.g. `invalid_token`, `insufficient_scope` or (DPoP) `use_dpop_nonce`.
    pub error: Option<String>,
    /// Whether a `DPoP` challenge was among them: the resource takes DPoP-bound tokens.
    pub dpop: bool,
}

impl Challenge {
    /// Reads the `Bearer` and `DPoP` challenges of a `WWW-Authenticate` value (a server that
    /// takes both sends both, with the same parameters); other schemes and unknown parameters
    /// are ignored.
    pub fn parse(header: &str) -> Challenge {
        let mut challenge = Challenge::default();
        let mut in_bearer = false;
        let mut rest = header.trim();
        while !rest.is_empty() {
            rest = rest.trim_start_matches([' ', ',', '\t']);
            // A token: a scheme name or a parameter name.
            let end = rest
                .find(|c: char| c == '=' || c == ',' || c.is_whitespace())
                .unwrap_or(rest.len());
            let token = &rest[..end];
            let after = rest[end..].trim_start();
            if let Some(value_part) = after.strip_prefix('=') {
                let value_part = value_part.trim_start();
                let (value, remaining) = if let Some(quoted) = value_part.strip_prefix('"') {
                    let mut value = String::new();
                    let mut chars = quoted.char_indices();
                    let mut consumed = quoted.len();
                    while let Some((i, c)) = chars.next() {
                        match c {
                            '\\' => {
                                if let Some((_, n)) = chars.next() {
                                    value.push(n);
                                }
                            }
                            '"' => {
                                consumed = i + 1;
                                break;
                            }
                            c => value.push(c),
                        }
                    }
                    (value, &quoted[consumed..])
                } else {
                    let end = value_part.find(',').unwrap_or(value_part.len());
                    (value_part[..end].trim().to_string(), &value_part[end..])
                };
                if in_bearer {
                    match token.to_ascii_lowercase().as_str() {
                        "resource_metadata" => challenge.resource_metadata = Some(value),
                        "scope" => challenge.scope = Some(value),
                        "error" => challenge.error = Some(value),
                        _ => {}
                    }
                }
                rest = remaining;
            } else {
                if !token.is_empty() {
                    let dpop = token.eq_ignore_ascii_case("dpop");
                    challenge.dpop |= dpop;
                    in_bearer = token.eq_ignore_ascii_case("bearer") || dpop;
                }
                rest = if end == 0 {
                    &rest[rest.chars().next().map_or(0, char::len_utf8)..]
                } else {
                    after
                };
            }
        }
        challenge
    }

    /// The challenge's scopes, split.
    pub fn scopes(&self) -> Vec<String> {
        split_scopes(self.scope.as_deref())
    }
}

/// Space-separated scopes, split; empty entries dropped.
pub fn split_scopes(scope: Option<&str>) -> Vec<String> {
    scope
        .unwrap_or("")
        .split_whitespace()
        .map(str::to_string)
        .collect()
}

/// Protected resource metadata (RFC 9728), the members this client reads.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProtectedResource {
    /// The resource identifier.
    #[serde(default)]
    pub resource: Option<String>,
    /// Issuer identifiers of the authorization servers.
    #[serde(default)]
    pub authorization_servers: Vec<String>,
    /// Scopes the resource knows.
    #[serde(default)]
    pub scopes_supported: Option<Vec<String>>,
    /// The DPoP proof algorithms the resource takes (RFC 9728 section 2).
    #[serde(default)]
    pub dpop_signing_alg_values_supported: Option<Vec<String>>,
    /// Whether the resource takes DPoP-bound tokens only (RFC 9728 section 2).
    #[serde(default)]
    pub dpop_bound_access_tokens_required: Option<bool>,
}

impl ProtectedResource {
    /// Whether the resource says it takes DPoP-bound tokens: it requires them, or names
    /// the DPoP proof algorithms it takes.
    pub fn takes_dpop(&self) -> bool {
        self.dpop_bound_access_tokens_required == Some(true)
            || self
                .dpop_signing_alg_values_supported
                .as_ref()
                .is_some_and(|algs| !algs.is_empty())
    }
}

/// Authorization server metadata (RFC 8414, and OpenID Connect discovery), the members this
/// client reads.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuthServerMetadata {
    /// The issuer identifier.
    #[serde(default)]
    pub issuer: String,
    /// Where the user authorizes.
    #[serde(default)]
    pub authorization_endpoint: Option<String>,
    /// Where codes and refresh tokens become access tokens.
    #[serde(default)]
    pub token_endpoint: Option<String>,
    /// Dynamic client registration (RFC 7591), if offered.
    #[serde(default)]
    pub registration_endpoint: Option<String>,
    /// Scopes the server knows.
    #[serde(default)]
    pub scopes_supported: Option<Vec<String>>,
    /// Grant types it issues tokens for.
    #[serde(default)]
    pub grant_types_supported: Option<Vec<String>>,
    /// Client authentication methods at the token endpoint.
    #[serde(default)]
    pub token_endpoint_auth_methods_supported: Option<Vec<String>>,
    /// PKCE methods.
    #[serde(default)]
    pub code_challenge_methods_supported: Option<Vec<String>>,
    /// Client ID Metadata Documents (a URL as `client_id`).
    #[serde(default)]
    pub client_id_metadata_document_supported: Option<bool>,
    /// RFC 9207: the authorization response carries `iss`.
    #[serde(default)]
    pub authorization_response_iss_parameter_supported: Option<bool>,
    /// RFC 9449 section 5.1: the DPoP proof algorithms the server takes (it issues
    /// DPoP-bound tokens).
    #[serde(default)]
    pub dpop_signing_alg_values_supported: Option<Vec<String>>,
}

impl AuthServerMetadata {
    /// Whether `scope` is listed in `scopes_supported`.
    pub fn supports_scope(&self, scope: &str) -> bool {
        self.scopes_supported
            .as_ref()
            .is_some_and(|s| s.iter().any(|x| x == scope))
    }

    /// Whether PKCE with S256 is offered. The 2025-11-25 specification: without
    /// `code_challenge_methods_supported` the server does not support PKCE, and a client
    /// must refuse to proceed.
    pub fn offers_pkce_s256(&self) -> bool {
        self.code_challenge_methods_supported
            .as_ref()
            .is_some_and(|m| m.iter().any(|m| m == "S256"))
    }

    /// Whether the server binds tokens to DPoP proofs signed with ES256, the one algorithm
    /// this client signs with.
    pub fn offers_dpop_es256(&self) -> bool {
        self.dpop_signing_alg_values_supported
            .as_ref()
            .is_some_and(|algs| algs.iter().any(|a| a == "ES256"))
    }

    /// Whether the token endpoint accepts `method` (RFC 8414: `client_secret_basic` when the
    /// list is absent).
    pub fn supports_auth_method(&self, method: &str) -> bool {
        match &self.token_endpoint_auth_methods_supported {
            Some(list) => list.iter().any(|m| m == method),
            None => method == "client_secret_basic",
        }
    }
}

/// What discovery found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Discovery {
    /// The RFC 8707 `resource` to send: the metadata's `resource`, else the server URL.
    pub resource: String,
    /// The protected resource metadata, if the server has any.
    pub protected_resource: Option<ProtectedResource>,
    /// The authorization server.
    pub server: AuthServerMetadata,
    /// Found by the 2025-03-26 rules (no protected resource metadata).
    pub legacy: bool,
}

/// `scheme://authority` of `url`.
pub fn origin(url: &str) -> Option<String> {
    let uri: Uri = url.parse().ok()?;
    Some(format!(
        "{}://{}",
        uri.scheme_str()?.to_ascii_lowercase(),
        uri.authority()?.as_str().to_ascii_lowercase()
    ))
}

/// The path of `url` without a trailing `/` (`""` for the root).
fn path_of(url: &str) -> String {
    let uri: Uri = match url.parse() {
        Ok(u) => u,
        Err(_) => return String::new(),
    };
    uri.path().trim_end_matches('/').to_string()
}

/// The server URL as a resource identifier: no fragment, scheme and host in lower case.
pub fn canonical_resource(server_url: &str) -> String {
    let no_fragment = server_url.split('#').next().unwrap_or(server_url);
    match (origin(no_fragment), no_fragment.parse::<Uri>()) {
        (Some(o), Ok(uri)) => {
            let pq = uri.path_and_query().map(|p| p.as_str()).unwrap_or("");
            let pq = if pq == "/" { "" } else { pq };
            format!("{o}{pq}")
        }
        _ => no_fragment.to_string(),
    }
}

/// Protected resource metadata URLs in the order they are tried.
pub fn resource_metadata_urls(server_url: &str, from_challenge: Option<&str>) -> Vec<String> {
    let mut urls = Vec::new();
    if let Some(u) = from_challenge {
        urls.push(u.to_string());
    }
    if let Some(o) = origin(server_url) {
        let path = path_of(server_url);
        if !path.is_empty() {
            urls.push(format!("{o}/.well-known/oauth-protected-resource{path}"));
        }
        urls.push(format!("{o}/.well-known/oauth-protected-resource"));
    }
    urls.dedup();
    urls
}

/// Authorization server metadata URLs for `issuer`, in the order they are tried.
pub fn auth_server_metadata_urls(issuer: &str) -> Vec<String> {
    let Some(o) = origin(issuer) else {
        return Vec::new();
    };
    let path = path_of(issuer);
    if path.is_empty() {
        vec![
            format!("{o}/.well-known/oauth-authorization-server"),
            format!("{o}/.well-known/openid-configuration"),
        ]
    } else {
        vec![
            format!("{o}/.well-known/oauth-authorization-server{path}"),
            format!("{o}/.well-known/openid-configuration{path}"),
            format!("{o}{path}/.well-known/openid-configuration"),
        ]
    }
}

/// Whether the metadata's `resource` names the server at `server_url`: the same origin, and
/// the server's path equal to the resource's path or under it.
pub fn resource_matches(resource: &str, server_url: &str) -> bool {
    let (Some(a), Some(b)) = (origin(resource), origin(server_url)) else {
        return false;
    };
    if a != b && default_port(&a) != default_port(&b) {
        return false;
    }
    if resource.contains('#') {
        return false;
    }
    let rp = path_of(resource);
    let sp = path_of(server_url);
    rp.is_empty() || sp == rp || sp.starts_with(&format!("{rp}/"))
}

/// `http://h:80` and `http://h` are one origin.
fn default_port(origin: &str) -> String {
    origin
        .strip_suffix(":80")
        .filter(|_| origin.starts_with("http://"))
        .or_else(|| {
            origin
                .strip_suffix(":443")
                .filter(|_| origin.starts_with("https://"))
        })
        .unwrap_or(origin)
        .to_string()
}

/// Issuers compare equal up to a trailing `/`.
fn same_issuer(a: &str, b: &str) -> bool {
    a.trim_end_matches('/') == b.trim_end_matches('/')
}

/// Runs discovery for the server at `server_url`; `challenge` is the server's 401 challenge
/// if there was one. An error is [`AuthErrorKind::Discovery`], saying why in words.
pub async fn discover(
    client: &HttpsClient,
    server_url: &str,
    challenge: Option<&Challenge>,
) -> Result<Discovery, AuthError> {
    find(client, server_url, challenge)
        .await
        .map_err(|why| AuthError::new(AuthErrorKind::Discovery, why))
}

/// [`discover`], its errors in words.
async fn find(
    client: &HttpsClient,
    server_url: &str,
    challenge: Option<&Challenge>,
) -> Result<Discovery, String> {
    let candidates = resource_metadata_urls(
        server_url,
        challenge.and_then(|c| c.resource_metadata.as_deref()),
    );
    let mut protected = None;
    for url in &candidates {
        match fetch::get(client, url).await {
            Ok(a) if a.status == 200 => {
                if let Some(prm) = a
                    .json()
                    .and_then(|v| serde_json::from_value::<ProtectedResource>(v).ok())
                {
                    tracing::debug!("protected resource metadata from {url}");
                    protected = Some(prm);
                    break;
                }
            }
            Ok(a) => tracing::debug!(
                "no protected resource metadata at {url} (HTTP {})",
                a.status
            ),
            Err(e) => tracing::debug!("no protected resource metadata: {e}"),
        }
    }
    let Some(prm) = protected else {
        return legacy_discovery(client, server_url).await;
    };
    let (resource, issuer) = check_protected_resource(&prm, server_url)?;
    let mut tried = Vec::new();
    for url in auth_server_metadata_urls(&issuer) {
        match fetch::get(client, &url).await {
            Ok(a) if a.status == 200 => {
                let Some(meta) = a
                    .json()
                    .and_then(|v| serde_json::from_value::<AuthServerMetadata>(v).ok())
                else {
                    tried.push(format!("{url} (not JSON metadata)"));
                    continue;
                };
                check_metadata(&meta, &issuer, &url)?;
                return Ok(Discovery {
                    resource,
                    protected_resource: Some(prm),
                    server: meta,
                    legacy: false,
                });
            }
            Ok(a) => tried.push(format!("{url} (HTTP {})", a.status)),
            Err(e) => tried.push(e.to_string()),
        }
    }
    Err(format!(
        "no authorization server metadata for {issuer}: tried {}",
        tried.join(", ")
    ))
}

/// Checks protected resource metadata against the server at `server_url`: its `resource`
/// must name the server, and its first authorization server must be a URL OAuth may fetch.
/// Returns the resource to send and that issuer.
pub(crate) fn check_protected_resource(
    prm: &ProtectedResource,
    server_url: &str,
) -> Result<(String, String), String> {
    let resource = match prm.resource.as_deref() {
        Some(r) if resource_matches(r, server_url) => r.to_string(),
        Some(r) => {
            return Err(format!(
                "the protected resource metadata is for {r:?}, not for this server's URL {server_url:?}; refusing to log in (check the server URL)"
            ));
        }
        None => {
            return Err(
                "the protected resource metadata names no resource; refusing to log in".into(),
            );
        }
    };
    let issuer = prm.authorization_servers.first().cloned().ok_or_else(|| {
        "the protected resource metadata lists no authorization server".to_string()
    })?;
    fetch::check_url("the authorization server", &issuer)?;
    Ok((resource, issuer))
}

/// Checks authorization server metadata fetched from `url` for `issuer`: it must name that
/// issuer (RFC 8414 section 3.3), and its endpoints must pass [`check_endpoints`].
pub(crate) fn check_metadata(
    meta: &AuthServerMetadata,
    issuer: &str,
    url: &str,
) -> Result<(), String> {
    if !same_issuer(&meta.issuer, issuer) {
        return Err(format!(
            "the authorization server metadata at {url} names issuer {:?}, not {issuer:?} (RFC 8414 section 3.3); refusing it",
            meta.issuer
        ));
    }
    check_endpoints(meta)
}

/// Checks what the flows will use of the metadata: a token endpoint, and every issuer and
/// endpoint URL `https` (or `http` on a loopback host).
fn check_endpoints(meta: &AuthServerMetadata) -> Result<(), String> {
    let issuer = &meta.issuer;
    // First: later messages show the issuer, and a URL that parses has no control character.
    fetch::check_url("the authorization server issuer", issuer)?;
    if meta.token_endpoint.is_none() {
        return Err(format!(
            "the authorization server {issuer} has no token_endpoint"
        ));
    }
    for (name, url) in [
        ("authorization_endpoint", &meta.authorization_endpoint),
        ("token_endpoint", &meta.token_endpoint),
        ("registration_endpoint", &meta.registration_endpoint),
    ] {
        if let Some(url) = url {
            fetch::check_url(&format!("the {name} of {issuer}"), url)?;
        }
    }
    Ok(())
}

/// Whether `issuer`, from the metadata on the MCP server's origin `base` (2025-03-26), may
/// stand: it must be on that origin. RFC 8414 section 3.3 asks for the very URL the metadata
/// was fetched for (here `base`); an issuer with a path on the same origin is let through
/// because the 0.1.16 conformance suite's `auth/2025-03-26-oauth-metadata-backcompat` serves
/// `<origin>/oauth` there (0.2.0-alpha.12 serves `<origin>`). Either way the origin that
/// served the metadata owns the issuer, so no server can claim another's.
pub fn legacy_issuer_matches(issuer: &str, base: &str) -> bool {
    origin(issuer).is_some_and(|o| default_port(&o) == default_port(base))
        && !issuer.contains(['?', '#'])
}

/// Checks authorization server metadata fetched from `url` on the MCP server's origin `base`
/// (2025-03-26): its issuer must be on that origin ([`legacy_issuer_matches`]), and its
/// endpoints must pass [`check_endpoints`].
pub(crate) fn check_legacy_metadata(
    meta: &AuthServerMetadata,
    base: &str,
    url: &str,
) -> Result<(), String> {
    if !legacy_issuer_matches(&meta.issuer, base) {
        return Err(format!(
            "the authorization server metadata at {url} names issuer {:?}, which is not on the server's own origin {base} (RFC 8414 section 3.3); refusing it",
            meta.issuer
        ));
    }
    check_endpoints(meta)
}

/// The 2025-03-26 rules: metadata on the server's origin, else the default endpoints.
async fn legacy_discovery(client: &HttpsClient, server_url: &str) -> Result<Discovery, String> {
    let base = origin(server_url).ok_or_else(|| format!("{server_url:?} is not a URL"))?;
    let resource = canonical_resource(server_url);
    let url = format!("{base}/.well-known/oauth-authorization-server");
    if let Ok(a) = fetch::get(client, &url).await
        && a.status == 200
        && let Some(meta) = a
            .json()
            .and_then(|v| serde_json::from_value::<AuthServerMetadata>(v).ok())
    {
        check_legacy_metadata(&meta, &base, &url)?;
        return Ok(Discovery {
            resource,
            protected_resource: None,
            server: meta,
            legacy: true,
        });
    }
    tracing::debug!(
        "no authorization server metadata on {base}; using /authorize, /token, /register"
    );
    let server = AuthServerMetadata {
        issuer: base.clone(),
        authorization_endpoint: Some(format!("{base}/authorize")),
        token_endpoint: Some(format!("{base}/token")),
        registration_endpoint: Some(format!("{base}/register")),
        // No metadata to ask: 2025-03-26 requires PKCE of every server, so S256 is taken
        // as offered (the suite's auth/2025-03-26-oauth-endpoint-fallback logs in so).
        code_challenge_methods_supported: Some(vec!["S256".into()]),
        ..Default::default()
    };
    check_endpoints(&server)?;
    Ok(Discovery {
        resource,
        protected_resource: None,
        server,
        legacy: true,
    })
}

/// The value of a JSON string member, if any.
pub(crate) fn str_member<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn challenges_are_read() {
        let c = Challenge::parse(
            r#"Bearer error="insufficient_scope", scope="mcp:basic mcp:write", resource_metadata="http://h/.well-known/oauth-protected-resource/mcp", error_description="a \"b\", c""#,
        );
        assert_eq!(c.error.as_deref(), Some("insufficient_scope"));
        assert_eq!(c.scopes(), vec!["mcp:basic", "mcp:write"]);
        assert_eq!(
            c.resource_metadata.as_deref(),
            Some("http://h/.well-known/oauth-protected-resource/mcp")
        );
        let c = Challenge::parse(r#"Basic realm="x", Bearer scope=read,error=invalid_token"#);
        assert_eq!(c.scope.as_deref(), Some("read"));
        assert_eq!(c.error.as_deref(), Some("invalid_token"));
        let c = Challenge::parse(r#"Basic realm="x", scope="no""#);
        assert_eq!(c, Challenge::default());
        assert_eq!(Challenge::parse("Bearer"), Challenge::default());
        // RFC 9449 section 7.1: the DPoP scheme, as the conformance suite's server sends it.
        let c = Challenge::parse(
            r#"DPoP error="use_dpop_nonce", resource_metadata="http://h/.well-known/oauth-protected-resource/mcp""#,
        );
        assert_eq!(c.error.as_deref(), Some("use_dpop_nonce"));
        assert_eq!(
            c.resource_metadata.as_deref(),
            Some("http://h/.well-known/oauth-protected-resource/mcp")
        );
        let c = Challenge::parse(r#"Basic realm="x", DPoP algs="ES256", scope="s""#);
        assert_eq!(c.scope.as_deref(), Some("s"));
    }

    #[test]
    fn metadata_urls_follow_the_spec_order() {
        assert_eq!(
            resource_metadata_urls("http://h:1/mcp", Some("http://h:1/custom.json")),
            vec![
                "http://h:1/custom.json",
                "http://h:1/.well-known/oauth-protected-resource/mcp",
                "http://h:1/.well-known/oauth-protected-resource"
            ]
        );
        assert_eq!(
            resource_metadata_urls("http://h:1/", None),
            vec!["http://h:1/.well-known/oauth-protected-resource"]
        );
        assert_eq!(
            auth_server_metadata_urls("https://a.test/tenant1"),
            vec![
                "https://a.test/.well-known/oauth-authorization-server/tenant1",
                "https://a.test/.well-known/openid-configuration/tenant1",
                "https://a.test/tenant1/.well-known/openid-configuration"
            ]
        );
        assert_eq!(
            auth_server_metadata_urls("https://a.test/"),
            vec![
                "https://a.test/.well-known/oauth-authorization-server",
                "https://a.test/.well-known/openid-configuration"
            ]
        );
    }

    #[test]
    fn resources_match_by_origin_and_path_prefix() {
        assert!(resource_matches("http://h:1/mcp", "http://h:1/mcp"));
        assert!(resource_matches("http://h:1", "http://h:1/mcp"));
        assert!(resource_matches("HTTP://H:1/", "http://h:1/mcp"));
        assert!(resource_matches("https://h", "https://h:443/mcp"));
        assert!(resource_matches("http://h:1/api", "http://h:1/api/mcp"));
        assert!(!resource_matches("http://h:1/mcpx", "http://h:1/mcp"));
        assert!(!resource_matches("http://h:1/api", "http://h:1/apix/mcp"));
        assert!(!resource_matches(
            "https://evil.example.com/mcp",
            "http://h:1/mcp"
        ));
        assert!(!resource_matches("http://h:2/mcp", "http://h:1/mcp"));
        assert_eq!(
            canonical_resource("HTTP://Host:1/mcp#x"),
            "http://host:1/mcp"
        );
        assert_eq!(canonical_resource("http://host:1/"), "http://host:1");
    }

    /// RFC 8414 section 3.3 asks for the issuer the metadata URL was made from. On the
    /// 2025-03-26 path that is the server's origin; an issuer with a path on that origin is
    /// let through for the 0.1.16 suite's `auth/2025-03-26-oauth-metadata-backcompat`,
    /// which serves `<origin>/oauth` at the origin's well-known URL (0.2.0-alpha.12 serves
    /// `<origin>`). Another origin never passes.
    #[test]
    fn a_legacy_issuer_must_be_on_the_servers_origin() {
        assert!(legacy_issuer_matches("http://h:1", "http://h:1"));
        assert!(legacy_issuer_matches("http://h:1/", "http://h:1"));
        assert!(legacy_issuer_matches("http://h:1/oauth", "http://h:1"));
        assert!(legacy_issuer_matches("https://h", "https://h:443"));
        assert!(!legacy_issuer_matches(
            "https://trusted.example",
            "http://h:1"
        ));
        assert!(!legacy_issuer_matches("http://h:2", "http://h:1"));
        assert!(!legacy_issuer_matches("https://h:1", "http://h:1"));
        assert!(!legacy_issuer_matches("http://h:1.evil", "http://h:1"));
        assert!(!legacy_issuer_matches("", "http://h:1"));
        assert!(!legacy_issuer_matches("http://h:1/x?y", "http://h:1"));
        assert!(fetch::check_url("i", "http://h:1/\u{1b}[2J").is_err());
    }

    #[test]
    fn oauth_urls_are_https_or_loopback_http() {
        for ok in [
            "https://as.example.com/token",
            "HTTPS://as.example.com",
            "http://localhost:1/token",
            "http://127.0.0.1/token",
            "http://127.8.9.1/token",
            "http://[::1]:8/token",
            // The same machine in IPv4-mapped form: loopback by either scheme.
            "http://[::ffff:7f00:1]:8/token",
            "https://[::ffff:7f00:1]:8/token",
            "https://127.0.0.1/token",
        ] {
            assert!(fetch::check_url("u", ok).is_ok(), "{ok}");
        }
        // One rule for every form and every scheme: a host written another way than a
        // browser writes it, or naming no machine, is refused over https as over http.
        for scheme in ["http", "https"] {
            for (host, says) in [
                ("0.0.0.0", "unspecified address"),
                ("[::]", "unspecified address"),
                ("[::ffff:0.0.0.0]", "form that readers take differently"),
                (
                    "0",
                    "form that readers take differently (a browser reads it as 0.0.0.0)",
                ),
                ("0x7f.1", "a browser reads it as 127.0.0.1"),
                ("2130706433", "a browser reads it as 127.0.0.1"),
                ("0177.0.0.1", "a browser reads it as 127.0.0.1"),
                ("127.1", "a browser reads it as 127.0.0.1"),
                (
                    "[::FFFF:127.0.0.1]",
                    "a browser reads it as [::ffff:7f00:1]",
                ),
                ("MCht0x7f.1", "ends in a number but is not an IPv4 address"),
                ("1.2.3.4.5", "ends in a number"),
                ("as.example.0x10", "ends in a number"),
            ] {
                let url = format!("{scheme}://{host}/token");
                let err = fetch::check_url("the token_endpoint", &url).unwrap_err();
                assert!(err.contains(says), "{url}: {err}");
            }
        }
        for (bad, says) in [
            (
                "http://as.example.com/token",
                "is plain http on a host that is not this machine",
            ),
            ("http://10.0.0.1/token", "is plain http"),
            ("http://localhost.evil.example/token", "is plain http"),
            ("file:///etc/passwd", "is not an https URL"),
            ("javascript:alert(1)", "is not an https URL"),
            ("https:///nohost", "not a URL"),
            ("https://a b", "is not a URL"),
            // Found by the oauth_metadata fuzz target: these parse as an authority (host
            // `https`), not as a URL.
            ("https:443", "is not a URL"),
            ("https:", "is not a URL"),
        ] {
            let err = fetch::check_url("the token_endpoint", bad).unwrap_err();
            assert!(
                err.starts_with("the token_endpoint \"") && err.contains(says),
                "{bad}: {err}"
            );
        }
    }
}
