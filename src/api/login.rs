//! The OAuth routes: the login stream, paste-back, logout and a pre-registered client.
//!
//! `GET /v1/mcp/oauth?name=X` starts a login with a [`LoopbackAgent`] that opens no browser:
//! the stream's first event carries the authorization URL for the caller to open; the
//! login ends when the browser reaches the loopback callback or when the URL it ended on is
//! pasted to `POST /v1/mcp/oauth/callback`. The last event says how it went, and the server
//! is reconnected first, so a successful login shows it connected. The stream lasts at most
//! [`super::Limits::login_timeout`] (plus the reconnect); closing it cancels the login. One
//! login per server at a time.

use super::{
    ApiError, Body, ChannelBody, State, ok, only_members, optional_string, required_string,
};
use crate::auth::callback::{CallbackParams, DEFAULT_REDIRECT_URI, LoopbackAgent};
use crate::host::config::{Config, HttpServer, ServerConfig};
use crate::host::oauth;
use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::header::{CACHE_CONTROL, CONTENT_TYPE, HeaderValue};
use hyper::{Response, StatusCode};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, watch};

type Answer = Result<Response<Body>, ApiError>;

/// How a login ended: `Err` carries the reason.
type Outcome = Option<Result<(), String>>;

/// A login in progress.
pub(crate) struct Pending {
    /// Where pasted redirect URLs go.
    paste: mpsc::Sender<String>,
    /// Set once the login has ended.
    done: watch::Receiver<Outcome>,
}

/// How often the login stream sends a comment, so a caller that went away is noticed.
const KEEPALIVE: Duration = Duration::from_secs(2);

fn event(value: &Value) -> Bytes {
    Bytes::from(format!("data: {value}\n\n"))
}

/// The `name` query parameter.
fn name_param(query: &str) -> Result<String, ApiError> {
    crate::auth::pkce::parse_query(query)
        .into_iter()
        .find(|(k, _)| k == "name")
        .map(|(_, v)| v)
        .filter(|v| !v.is_empty())
        .ok_or_else(|| ApiError::bad_request("give the server as ?name=NAME"))
}

/// The `"auth": "oauth"` entry `name`: 404 if there is no such server, 400 if it is not one
/// that logs in.
fn oauth_server(config: &Config, name: &str) -> Result<HttpServer, ApiError> {
    if config.server(name).is_none() {
        return Err(ApiError::not_found(format!(
            "no server named {name:?}; GET /v1/mcp lists them"
        )));
    }
    oauth::oauth_entry(config, name).map_err(|e| ApiError::bad_request(e.to_string()))
}

/// `GET /v1/mcp/oauth?name=X`: the login stream.
pub(super) fn start(state: Arc<State>, query: &str) -> Answer {
    let name = name_param(query)?;
    let config = state.read_config()?;
    oauth_server(&config, &name)?;
    let limits = state.options.limits.clone();
    let (paste_tx, paste_rx) = mpsc::channel(4);
    let (done_tx, done_rx) = watch::channel(None);
    {
        let mut logins = state.logins.lock().expect("logins lock");
        if logins.contains_key(&name) {
            return Err(ApiError::conflict(format!(
                "a login to {name} is already in progress; finish it, or close its stream"
            )));
        }
        logins.insert(
            name.clone(),
            Pending {
                paste: paste_tx,
                done: done_rx,
            },
        );
    }
    let (events, rx) = mpsc::channel::<Bytes>(8);
    let shown = events.clone();
    let mut agent = LoopbackAgent::new().with_paste(paste_rx);
    agent.open_browser = false;
    agent.timeout = limits.login_timeout;
    agent.show_url = Arc::new(move |url| {
        let _ = shown.try_send(event(&json!({"url": url})));
    });
    tokio::spawn(async move {
        let store = state.options.token_store.clone();
        let login = oauth::login(&config, &name, store, &agent);
        let keepalive = async {
            loop {
                tokio::time::sleep(KEEPALIVE).await;
                if events
                    .send(Bytes::from_static(b": waiting\n\n"))
                    .await
                    .is_err()
                {
                    break;
                }
            }
        };
        let outcome = tokio::select! {
            r = tokio::time::timeout(limits.login_timeout + Duration::from_secs(5), login) => match r {
                Ok(Ok(())) => Ok(()),
                Ok(Err(e)) => Err(e.to_string()),
                Err(_) => Err(format!("no login within {} s; start it again", limits.login_timeout.as_secs())),
            },
            _ = keepalive => Err("the login stream was closed before the login ended".to_string()),
        };
        drop(agent);
        state.logins.lock().expect("logins lock").remove(&name);
        if outcome.is_ok() && state.manager.status().iter().any(|s| s.name == name) {
            if let Err(e) = state.manager.reconnect_server(&name).await {
                tracing::warn!(server = %name, "logged in, but the reconnect failed: {e}");
            }
        }
        let last = match &outcome {
            Ok(()) => json!({"done": true, "ok": true}),
            Err(e) => json!({"done": true, "ok": false, "error": e}),
        };
        let _ = done_tx.send(Some(outcome));
        let _ = tokio::time::timeout(Duration::from_secs(5), events.send(event(&last))).await;
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
    only_members(&body, &["name", "url"])?;
    let name = required_string(&body, "name")?;
    let url = required_string(&body, "url")?;
    let params = CallbackParams::parse(&url);
    if params.code.is_none() && params.error.is_none() {
        return Err(ApiError::bad_request(
            "the URL has no code= or error=; paste the whole URL the browser ended on",
        ));
    }
    let (paste, mut done) = {
        let logins = state.logins.lock().expect("logins lock");
        let pending = logins.get(&name).ok_or_else(|| {
            ApiError::not_found(format!(
                "no login to {name} is in progress; start one with GET /v1/mcp/oauth?name={name}"
            ))
        })?;
        (pending.paste.clone(), pending.done.clone())
    };
    if paste.send(url).await.is_err() {
        return Err(ApiError::conflict(format!(
            "the login to {name} ended before the URL arrived; start it again"
        )));
    }
    let outcome = done
        .wait_for(Option::is_some)
        .await
        .map_err(|_| ApiError::internal("the login ended without an outcome"))?
        .clone();
    match outcome {
        Some(Ok(())) => ok(json!({"name": name, "ok": true})),
        Some(Err(e)) => Err(ApiError::new(StatusCode::BAD_REQUEST, "login_failed", e)),
        None => unreachable!("waited for an outcome"),
    }
}

/// `DELETE /v1/mcp/oauth?name=X`: forgets the tokens; the server then shows `needs login`.
pub(super) async fn logout(state: &State, query: &str) -> Answer {
    let name = name_param(query)?;
    let config = state.read_config()?;
    let http = oauth_server(&config, &name)?;
    oauth::server_oauth(&name, &http, state.options.token_store.clone())
        .logout()
        .await
        .map_err(|e| ApiError::internal(e.to_string()))?;
    let running = state.manager.status().iter().any(|s| s.name == name);
    if running && let Err(e) = state.manager.reconnect_server(&name).await {
        tracing::info!(server = %name, "logged out: {e}");
    }
    let state_name = state
        .manager
        .status()
        .into_iter()
        .find(|s| s.name == name)
        .map(|s| s.state.name());
    ok(json!({"name": name, "state": state_name}))
}

/// Whether a redirect URI is one the loopback listener can serve.
fn is_loopback_redirect(uri: &str) -> bool {
    uri.strip_prefix("http://localhost:")
        .or_else(|| uri.strip_prefix("http://127.0.0.1:"))
        .and_then(|rest| {
            let (port, path) = rest.split_at(rest.find('/')?);
            Some(port.parse::<u16>().is_ok() && path.starts_with('/'))
        })
        .unwrap_or(false)
}

/// `POST /v1/mcp/oauth/client`: `{"name", "client_id", "client_secret"?, "redirect_uri"?}`.
/// The id and redirect URI go to the entry; the secret to the token store, never back out.
pub(super) async fn set_client(state: &State, body: Value) -> Answer {
    only_members(
        &body,
        &["name", "client_id", "client_secret", "redirect_uri"],
    )?;
    let name = required_string(&body, "name")?;
    let client_id = required_string(&body, "client_id")?;
    let secret = optional_string(&body, "client_secret")?;
    let redirect_uri = optional_string(&body, "redirect_uri")?;
    let shown_uri = redirect_uri
        .clone()
        .unwrap_or_else(|| DEFAULT_REDIRECT_URI.to_string());
    if !is_loopback_redirect(&shown_uri) {
        return Err(ApiError::bad_request(format!(
            "redirect_uri {shown_uri:?} is not http://localhost:PORT/PATH or http://127.0.0.1:PORT/PATH, which the login listener serves"
        )));
    }
    let _file = state.config_lock.lock().await;
    let mut config = state.read_config()?;
    let mut http = oauth_server(&config, &name)?;
    oauth::save_client_secret(
        state.options.token_store.as_ref(),
        &name,
        &http.url,
        &client_id,
        secret.as_deref(),
    )
    .map_err(|e| ApiError::internal(format!("cannot keep the client secret: {e}")))?;
    http.oauth_client_id = Some(client_id.clone());
    http.oauth_client_secret = None;
    http.oauth_redirect_uri = redirect_uri;
    config
        .set_server(&name, &ServerConfig::Http(http))
        .map_err(|e| ApiError::bad_request(e.to_string()))?;
    state.save_config(&config)?;
    ok(json!({
        "name": name,
        "client_id": client_id,
        "redirect_uri": shown_uri,
        "hasSecret": secret.is_some(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redirect_uris() {
        for ok in [
            DEFAULT_REDIRECT_URI,
            "http://127.0.0.1:9/cb",
            "http://localhost:1/",
        ] {
            assert!(is_loopback_redirect(ok), "{ok}");
        }
        for bad in [
            "https://localhost:1/cb",
            "http://localhost/cb",
            "http://localhost:x/cb",
            "http://evil.test:1/cb",
            "http://localhost:1",
        ] {
            assert!(!is_loopback_redirect(bad), "{bad}");
        }
    }
}
