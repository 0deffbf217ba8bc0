//! The OAuth routes: the login stream, paste-back, logout and a pre-registered client.
//!
//! `GET /v1/mcp/oauth?name=X` starts a login ([`Control::begin_login`]) that opens no
//! browser: the stream's first event carries the authorization URL for the caller to open;
//! the login ends when the browser reaches the loopback callback or when the URL it ended on
//! is pasted to `POST /v1/mcp/oauth/callback`. The last event says how it went, and the
//! server is reconnected first, so a successful login shows it connected. The stream lasts at
//! most [`super::Limits::login_timeout`] (plus the reconnect); closing it cancels the login.
//! One login per server at a time.
//!
//! [`Control::begin_login`]: crate::host::Control::begin_login

use super::{
    ApiError, Body, ChannelBody, State, ok, only_members, optional_string, required_string,
};
use crate::host::control::{LoginEvent, LoginOptions, OAuthClient};
use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::Response;
use hyper::header::{CACHE_CONTROL, CONTENT_TYPE, HeaderValue};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;

type Answer = Result<Response<Body>, ApiError>;

/// How often the login stream sends a comment, so a caller that went away is noticed.
const KEEPALIVE: Duration = Duration::from_secs(2);

/// How long one chunk of the stream may wait for a caller that does not read.
const SEND_LIMIT: Duration = Duration::from_secs(5);

fn event(value: &Value) -> Bytes {
    Bytes::from(format!("data: {value}\n\n"))
}

/// The `name` query parameter.
pub(super) fn name_param(query: &str) -> Result<String, ApiError> {
    crate::auth::pkce::parse_query(query)
        .into_iter()
        .find(|(k, _)| k == "name")
        .map(|(_, v)| v)
        .filter(|v| !v.is_empty())
        .ok_or_else(|| ApiError::bad_request("give the server as ?name=NAME"))
}

/// `GET /v1/mcp/oauth?name=X`: the login stream.
pub(super) fn start(state: Arc<State>, query: &str) -> Answer {
    let name = name_param(query)?;
    let options = LoginOptions {
        open_browser: false,
        timeout: state.options.limits.login_timeout,
    };
    let mut login = state.control.begin_login(&name, options)?;
    let (events, rx) = mpsc::channel::<Bytes>(8);
    // Forwards the login's events; when the caller is gone, ends, which drops (and so
    // cancels) the login.
    tokio::spawn(async move {
        loop {
            let chunk = tokio::select! {
                next = login.next() => match next {
                    Some(LoginEvent::Url(url)) => event(&json!({"url": url})),
                    Some(LoginEvent::Note(note)) => event(&json!({"note": note})),
                    Some(LoginEvent::Done(Ok(()))) => event(&json!({"done": true, "ok": true})),
                    Some(LoginEvent::Done(Err(e))) => event(&json!({"done": true, "ok": false, "error": e.to_string()})),
                    None => break,
                },
                _ = tokio::time::sleep(KEEPALIVE) => Bytes::from_static(b": waiting\n\n"),
            };
            match tokio::time::timeout(SEND_LIMIT, events.send(chunk)).await {
                Ok(Ok(())) => {}
                _ => break,
            }
        }
    });
    let mut response = Response::new(ChannelBody::new(rx).boxed());
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    Ok(response)
}

/// `POST /v1/mcp/oauth/callback`: `{"name", "url"}` completes the login in progress with
/// the URL the browser ended on; answers once the login has ended.
pub(super) async fn callback(state: &State, body: Value) -> Answer {
    let (name, url) = callback_request(&body)?;
    state.control.complete_login_by_paste(&name, &url).await?;
    ok(json!({"name": name, "ok": true}))
}

/// `POST /v1/mcp/oauth/callback`'s body: the server's name and the URL.
pub(super) fn callback_request(body: &Value) -> Result<(String, String), ApiError> {
    only_members(body, &["name", "url"])?;
    Ok((
        required_string(body, "name")?,
        required_string(body, "url")?,
    ))
}

/// `DELETE /v1/mcp/oauth?name=X`: forgets the tokens; the server then shows `needs login`.
pub(super) async fn logout(state: &State, query: &str) -> Answer {
    let name = name_param(query)?;
    let now = state.control.logout(&name).await?;
    ok(json!({"name": name, "state": now.map(|s| s.name())}))
}

/// `POST /v1/mcp/oauth/client`: `{"name", "client_id", "client_secret"?, "redirect_uri"?}`.
/// The id and redirect URI go to the entry; the secret to the token store, never back out.
pub(super) async fn set_client(state: &State, body: Value) -> Answer {
    let (name, client) = set_client_request(&body)?;
    let redirect_uri = state.control.set_oauth_client(&name, &client).await?;
    ok(json!({
        "name": name,
        "client_id": client.client_id,
        "redirect_uri": redirect_uri,
        "hasSecret": client.client_secret.is_some(),
    }))
}

/// `POST /v1/mcp/oauth/client`'s body: the server's name and its client.
pub(super) fn set_client_request(body: &Value) -> Result<(String, OAuthClient), ApiError> {
    only_members(
        body,
        &["name", "client_id", "client_secret", "redirect_uri"],
    )?;
    let name = required_string(body, "name")?;
    let client = OAuthClient {
        client_id: required_string(body, "client_id")?,
        client_secret: optional_string(body, "client_secret")?.map(Into::into),
        redirect_uri: optional_string(body, "redirect_uri")?,
    };
    Ok((name, client))
}
