//! The few HTTP exchanges OAuth needs (metadata GETs, form and JSON POSTs, the headless
//! authorization GET), on the transport's hyper client. No redirect is followed: an OAuth
//! endpoint that redirects is answered as it stands.

use crate::transport::http::Client;
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
                &self.location.as_deref().map(crate::text::redact_url),
            )
            .field("www_authenticate", &self.www_authenticate.is_some())
            .field("body", &format_args!("[{} bytes]", self.body.len()))
            .finish()
    }
}

impl Answer {
    /// The body as JSON, if it is.
    pub fn json(&self) -> Option<Value> {
        serde_json::from_slice(&self.body).ok()
    }

    /// A short, secret-free description of an error answer: the OAuth `error` and
    /// `error_description` when the body has them, else the start of the body.
    pub fn describe(&self) -> String {
        if let Some(v) = self.json()
            && let Some(e) = v.get("error").and_then(Value::as_str)
        {
            let d = v
                .get("error_description")
                .and_then(Value::as_str)
                .map(|d| format!(" ({d})"))
                .unwrap_or_default();
            return format!("HTTP {}: {e}{d}", self.status);
        }
        let text = String::from_utf8_lossy(&self.body[..self.body.len().min(200)])
            .trim()
            .to_string();
        if text.is_empty() {
            format!("HTTP {}", self.status)
        } else {
            format!("HTTP {}: {text}", self.status)
        }
    }
}

/// How a request authenticates the client at the token endpoint.
pub enum Basic<'a> {
    /// No `Authorization` header.
    None,
    /// `client_secret_basic`: id and secret, each form-encoded, in HTTP Basic.
    Credentials(&'a str, &'a str),
}

/// Sends one request; errors are the reason in words (never a header value).
pub async fn send(
    client: &Client,
    method: Method,
    url: &str,
    content_type: Option<&str>,
    body: Vec<u8>,
    basic: Basic<'_>,
) -> Result<Answer, String> {
    let uri: Uri = url.parse().map_err(|_| format!("{url:?} is not a URL"))?;
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
        let mut v = HeaderValue::from_str(&value).map_err(|_| "bad client credentials")?;
        v.set_sensitive(true);
        headers.insert(header::AUTHORIZATION, v);
    }
    let exchange = async {
        let response = client.request(request).await.map_err(|e| {
            let mut why = e.to_string();
            let mut source = std::error::Error::source(&e);
            while let Some(s) = source {
                why = format!("{why}: {s}");
                source = s.source();
            }
            format!("{url}: {why}")
        })?;
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
        let mut body = response.into_body();
        let mut bytes = Vec::new();
        while let Some(frame) = body.frame().await {
            let frame = frame.map_err(|e| format!("{url}: reading the body: {e}"))?;
            if let Ok(chunk) = frame.into_data() {
                if bytes.len() + chunk.len() > BODY_MAX {
                    return Err(format!("{url}: the answer is over {BODY_MAX} bytes"));
                }
                bytes.extend_from_slice(&chunk);
            }
        }
        Ok(Answer {
            status,
            location,
            www_authenticate,
            body: bytes,
        })
    };
    tokio::time::timeout(EXCHANGE_TIMEOUT, exchange)
        .await
        .map_err(|_| format!("{url}: no answer within {} s", EXCHANGE_TIMEOUT.as_secs()))?
}

/// GET `url` expecting JSON.
pub async fn get(client: &Client, url: &str) -> Result<Answer, String> {
    send(client, Method::GET, url, None, Vec::new(), Basic::None).await
}

/// POST a form.
pub async fn post_form(
    client: &Client,
    url: &str,
    pairs: &[(&str, &str)],
    basic: Basic<'_>,
) -> Result<Answer, String> {
    let body = super::pkce::form(pairs).into_bytes();
    send(
        client,
        Method::POST,
        url,
        Some("application/x-www-form-urlencoded"),
        body,
        basic,
    )
    .await
}

/// POST a JSON document.
pub async fn post_json(client: &Client, url: &str, body: &Value) -> Result<Answer, String> {
    send(
        client,
        Method::POST,
        url,
        Some("application/json"),
        body.to_string().into_bytes(),
        Basic::None,
    )
    .await
}
