//! The few HTTP exchanges OAuth needs (metadata GETs, form and JSON POSTs, the headless
//! authorization GET), on the transport's hyper client. No redirect is followed: an OAuth
//! endpoint that redirects is answered as it stands. Every URL is checked first
//! ([`check_url`]: https, or http on a loopback host), and no error quotes a body: a token
//! or registration answer carries secrets, so errors say what was wrong with it instead.

use super::{AuthError, AuthErrorKind};
use crate::safe_text::escape_controls;
use crate::transport::http::HttpsClient;
use crate::web_url::Host;
use base64::Engine;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::header::{self, HeaderValue};
use hyper::{Method, Request, Uri};
use serde_json::Value;
use std::time::Duration;

/// Longest wait for one OAuth exchange, headers and body.
pub const EXCHANGE_TIMEOUT: Duration = Duration::from_secs(30);
/// Largest OAuth response body read.
const BODY_MAX: usize = 1 << 20;

/// An HTTP answer: status, the headers we read, the body.
pub struct Answer {
    /// The status code.
    pub status: u16,
    /// `Location`, if any.
    pub location: Option<String>,
    /// `WWW-Authenticate`, if any.
    pub www_authenticate: Option<String>,
    /// `Content-Type`, if any.
    pub content_type: Option<String>,
    /// `DPoP-Nonce` (RFC 9449 section 8), if any.
    pub dpop_nonce: Option<String>,
    /// The body (at most 1 MiB).
    pub body: Vec<u8>,
}

impl std::fmt::Debug for Answer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Bodies hold tokens and client secrets; a redirect's query holds the code.
        f.debug_struct("Answer")
            .field("status", &self.status)
            .field(
                "location",
                &self.location.as_deref().map(crate::safe_text::redact_url),
            )
            .field("www_authenticate", &self.www_authenticate.is_some())
            .field("dpop_nonce", &self.dpop_nonce.is_some())
            .field("body", &format_args!("[{} bytes]", self.body.len()))
            .finish()
    }
}

impl Answer {
    /// The body as JSON, if it is.
    pub fn json(&self) -> Option<Value> {
        serde_json::from_slice(&self.body).ok()
    }

    /// A secret-free description of an answer that is not the one wanted: the status, the
    /// content type and, for an error status, the OAuth `error` and `error_description`
    /// (RFC 6749 section 5.2), escaped and cut short. Nothing else of the body is quoted.
    pub fn describe(&self) -> String {
        let content_type = self
            .content_type
            .as_deref()
            .map_or_else(|| "no content type".to_string(), |c| short(c, 80));
        let mut text = format!("HTTP {} ({content_type})", self.status);
        if let Some((error, description)) = self.oauth_error() {
            text.push_str(&format!(", OAuth error {error:?}"));
            if let Some(d) = description {
                text.push_str(&format!(": {d}"));
            }
        }
        text
    }

    /// The OAuth error of an error status (4xx or 5xx with a JSON `error` member): its code and
    /// description, escaped and cut short.
    fn oauth_error(&self) -> Option<(String, Option<String>)> {
        if self.status < 400 {
            return None;
        }
        let v = self.json()?;
        let error = v.get("error").and_then(Value::as_str)?;
        let description = v.get("error_description").and_then(Value::as_str);
        Some((short(error, 80), description.map(|d| short(d, 300))))
    }

    /// The OAuth `error` code of an error answer, if it has one.
    pub fn oauth_error_code(&self) -> Option<String> {
        self.oauth_error().map(|(code, _)| code)
    }

    /// Whether the server refused the request the OAuth way: a 4xx answer with an OAuth
    /// `error` (`invalid_grant`, `invalid_client`, ...), as opposed to a failure of the server
    /// or of the network.
    pub fn is_oauth_refusal(&self) -> bool {
        self.status < 500 && self.oauth_error().is_some()
    }

    /// The body as a JSON object, when the status is one of `ok` and the object has the
    /// string member `required`; else why not, in words that quote none of the body.
    pub fn json_with(&self, ok: &[u16], required: &str) -> Result<Value, String> {
        if !ok.contains(&self.status) {
            return Err(self.describe());
        }
        let Some(v) = self.json().filter(Value::is_object) else {
            return Err(format!("{}, not a JSON object", self.describe()));
        };
        if v.get(required).and_then(Value::as_str).is_none() {
            return Err(format!(
                "{}, a JSON object without the string member {required:?}",
                self.describe()
            ));
        }
        Ok(v)
    }
}

/// At most `max` characters of `text`, control characters escaped.
fn short(text: &str, max: usize) -> String {
    let cut = text
        .char_indices()
        .nth(max)
        .map_or(text, |(i, _)| &text[..i]);
    let more = if cut.len() < text.len() { "..." } else { "" };
    format!("{}{more}", escape_controls(cut))
}

/// Checks a URL the OAuth layer is about to fetch or open (`what` names it in the error):
/// `https`, or `http` on a loopback host (OAuth 2.1 section 1.5: anything else would carry
/// codes, tokens and client secrets in clear, or hand a browser a `file:` or `javascript:` URL).
///
/// One rule for every scheme and every way of writing a host: the host is read as a browser
/// reads it ([`Host::parse`]), and it must be written in that reading's own form, so the HTTP
/// client, a browser and this check all see the same machine. `0x7f.1`, `2130706433` (both
/// 127.0.0.1) or `MCht0x7f.1` (no address at all) are refused, and so is the unspecified
/// address (`0.0.0.0`, `[::]`), which names no machine but connects to this one.
pub fn check_url(what: &str, url: &str) -> Result<Uri, String> {
    let shown = short(url, 200);
    let scheme = url.split_once(':').map(|(s, _)| s.to_ascii_lowercase());
    if !matches!(scheme.as_deref(), Some("https" | "http")) {
        return Err(format!(
            "{what} \"{shown}\" is not an https URL; OAuth uses https (or http on localhost) only, so it is refused"
        ));
    }
    // `https:443` parses too, as an authority (host `https`) with no scheme: not a URL.
    let uri: Uri = url
        .parse()
        .ok()
        .filter(|u: &Uri| u.scheme_str().map(str::to_ascii_lowercase) == scheme)
        .ok_or_else(|| format!("{what} \"{shown}\" is not a URL; refusing it"))?;
    let written = uri.host().unwrap_or("");
    if written.is_empty() {
        return Err(format!("{what} \"{shown}\" names no host; refusing it"));
    }
    if !crate::transport::http::plain_authority(&uri) {
        return Err(format!(
            "{what} \"{shown}\" has a malformed host or port, or a user name in it; refusing it"
        ));
    }
    let host =
        Host::parse(written).map_err(|why| format!("{what} \"{shown}\" is refused: {why}"))?;
    if host.to_string() != written.to_ascii_lowercase() {
        return Err(format!(
            "{what} \"{shown}\" writes its host in a form that readers take differently (a browser reads it as {host}); refusing it"
        ));
    }
    if host.is_unspecified() {
        return Err(format!(
            "{what} \"{shown}\" names the unspecified address, no machine in particular (a connection reaches this one); refusing it"
        ));
    }
    if scheme.as_deref() == Some("http") && !host.is_loopback() {
        return Err(format!(
            "{what} \"{shown}\" is plain http on a host that is not this machine; OAuth needs https there (http only on localhost, 127.0.0.1 or [::1]), so it is refused"
        ));
    }
    Ok(uri)
}

/// How a request authenticates the client at the token endpoint.
pub enum Basic<'a> {
    /// No `Authorization` header.
    None,
    /// `client_secret_basic`: id and secret, each form-encoded, in HTTP Basic.
    Credentials(&'a str, &'a str),
}

/// Sends one request, with a DPoP proof (RFC 9449) when `dpop` has one; errors say why in
/// words (never a header value): no usable answer is [`AuthErrorKind::Network`].
pub async fn send(
    client: &HttpsClient,
    method: Method,
    url: &str,
    content_type: Option<&str>,
    body: Vec<u8>,
    basic: Basic<'_>,
    dpop: Option<&str>,
) -> Result<Answer, AuthError> {
    let uri =
        check_url("the OAuth URL", url).map_err(|e| AuthError::new(AuthErrorKind::Discovery, e))?;
    let network = |why: String| AuthError::new(AuthErrorKind::Network, why);
    let mut request = Request::new(Full::new(Bytes::from(body)));
    *request.method_mut() = method;
    *request.uri_mut() = uri;
    let headers = request.headers_mut();
    headers.insert(header::ACCEPT, HeaderValue::from_static("application/json"));
    if let Some(ct) = content_type
        && let Ok(v) = HeaderValue::from_str(ct)
    {
        headers.insert(header::CONTENT_TYPE, v);
    }
    if let Basic::Credentials(id, secret) = basic {
        let pair = format!(
            "{}:{}",
            super::pkce::encode(id),
            super::pkce::encode(secret)
        );
        let value = format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(pair)
        );
        let mut v = HeaderValue::from_str(&value)
            .map_err(|_| AuthError::new(AuthErrorKind::Config, "bad client credentials"))?;
        v.set_sensitive(true);
        headers.insert(header::AUTHORIZATION, v);
    }
    if let Some(proof) = dpop {
        let mut v = HeaderValue::from_str(proof)
            .map_err(|_| AuthError::new(AuthErrorKind::Other, "bad DPoP proof"))?;
        v.set_sensitive(true);
        headers.insert("dpop", v);
    }
    let exchange = async {
        let uri = request.uri().clone();
        let response = client.request(request).await.map_err(|e| {
            network(format!("{url}: {}", crate::error::chain_text(&e))).caused_by(e)
        })?;
        if let Some(why) = client.proxy_refusal(&uri, response.status()) {
            return Err(network(format!("{url}: {why}")));
        }
        let get = |name: header::HeaderName| {
            response
                .headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string)
        };
        let status = response.status().as_u16();
        let location = get(header::LOCATION);
        let www_authenticate = get(header::WWW_AUTHENTICATE);
        let content_type = get(header::CONTENT_TYPE);
        let dpop_nonce = get(header::HeaderName::from_static("dpop-nonce"));
        let mut body = response.into_body();
        let mut bytes = Vec::new();
        while let Some(frame) = body.frame().await {
            let frame =
                frame.map_err(|e| network(format!("{url}: reading the body: {e}")).caused_by(e))?;
            if let Ok(chunk) = frame.into_data() {
                if bytes.len() + chunk.len() > BODY_MAX {
                    return Err(network(format!(
                        "{url}: the answer is over {BODY_MAX} bytes"
                    )));
                }
                bytes.extend_from_slice(&chunk);
            }
        }
        Ok(Answer {
            status,
            location,
            www_authenticate,
            content_type,
            dpop_nonce,
            body: bytes,
        })
    };
    tokio::time::timeout(EXCHANGE_TIMEOUT, exchange)
        .await
        .map_err(|_| {
            network(format!(
                "{url}: no answer within {} s",
                EXCHANGE_TIMEOUT.as_secs()
            ))
        })?
}

/// GET `url` expecting JSON.
pub async fn get(client: &HttpsClient, url: &str) -> Result<Answer, AuthError> {
    send(
        client,
        Method::GET,
        url,
        None,
        Vec::new(),
        Basic::None,
        None,
    )
    .await
}

/// POST a form (with a DPoP proof when `dpop` has one).
pub async fn post_form(
    client: &HttpsClient,
    url: &str,
    pairs: &[(&str, &str)],
    basic: Basic<'_>,
    dpop: Option<&str>,
) -> Result<Answer, AuthError> {
    let body = super::pkce::form(pairs).into_bytes();
    send(
        client,
        Method::POST,
        url,
        Some("application/x-www-form-urlencoded"),
        body,
        basic,
        dpop,
    )
    .await
}

/// POST a JSON document.
pub async fn post_json(client: &HttpsClient, url: &str, body: &Value) -> Result<Answer, AuthError> {
    send(
        client,
        Method::POST,
        url,
        Some("application/json"),
        body.to_string().into_bytes(),
        Basic::None,
        None,
    )
    .await
}
