//! The OAuth operations of [`Control`]: a pre-registered client, logout, and logins with
//! paste-back; the logins in progress are this file's state ([`OAuthState`]).

use super::error::ControlError;
use crate::auth::TokenStore;
use crate::auth::callback::{CallbackParams, DEFAULT_REDIRECT_URI, LOGIN_TIMEOUT, LoopbackAgent};
use crate::error::{Error, ErrorKind};
use crate::host::config::{Config, HttpServer, ServerConfig};
use crate::host::manager::Manager;
use crate::host::oauth;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{mpsc, oneshot, watch};

/// How a login ended: `Err` carries the reason.
type Outcome = Option<Result<(), Error>>;

/// A login in progress, as the paste-back finds it.
struct Pending {
    paste: mpsc::Sender<String>,
    done: watch::Receiver<Outcome>,
    /// The `state` of the authorization URL once the login has shown it: a pasted URL
    /// that does not carry it is refused at once.
    state: Arc<Mutex<Option<String>>>,
}

/// The token store and the logins in progress, by server.
pub(super) struct OAuthState {
    pub(super) store: Arc<dyn TokenStore>,
    logins: Arc<Mutex<HashMap<String, Pending>>>,
}

/// A pre-registered OAuth client (one registered by hand with the authorization server):
/// [`OAuthClient::new`] with its id, then the setters for the rest.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct OAuthClient {
    /// Its id.
    pub client_id: String,
    /// Its secret, if it has one: kept in the token store, never in the config file.
    pub client_secret: Option<crate::secret::Secret>,
    /// Its exact redirect URI; `None` is `http://localhost:17988/callback`.
    pub redirect_uri: Option<String>,
}

impl OAuthClient {
    /// The client `client_id`: no secret, at the default redirect URI.
    pub fn new(client_id: impl Into<String>) -> Self {
        OAuthClient {
            client_id: client_id.into(),
            client_secret: None,
            redirect_uri: None,
        }
    }

    /// With the client secret `secret`.
    pub fn with_client_secret(mut self, secret: crate::secret::Secret) -> Self {
        self.client_secret = Some(secret);
        self
    }

    /// With the exact redirect URI registered, `uri`.
    pub fn with_redirect_uri(mut self, uri: impl Into<String>) -> Self {
        self.redirect_uri = Some(uri.into());
        self
    }
}

/// How a login runs: [`LoginOptions::default`] (the browser opened, five minutes to finish),
/// and the `with_*` setters.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct LoginOptions {
    /// Open the system browser on the authorization URL (it is always given as a
    /// [`LoginEvent::Url`] too).
    pub open_browser: bool,
    /// How long to wait for the user.
    pub timeout: Duration,
}

impl Default for LoginOptions {
    fn default() -> Self {
        LoginOptions {
            open_browser: true,
            timeout: LOGIN_TIMEOUT,
        }
    }
}

impl LoginOptions {
    /// With the system browser opened on the authorization URL, or not.
    pub fn with_open_browser(mut self, open: bool) -> Self {
        self.open_browser = open;
        self
    }

    /// With the user waited for at most `timeout`.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }
}

/// What a login in progress tells.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum LoginEvent {
    /// The authorization URL to open (from the server's metadata: show it escaped).
    Url(String),
    /// The login succeeded, with something the user should know ([`StoredTokens::login_note`]:
    /// no refresh token was issued); [`LoginEvent::Done`] follows.
    ///
    /// [`StoredTokens::login_note`]: crate::auth::StoredTokens::login_note
    Note(String),
    /// The login ended (the server was reconnected first): `Err` says why it failed
    /// ([`Error::auth_error`](crate::Error::auth_error) tells a refused login from a locked
    /// keychain or a network failure; a login that ran out of time is a timeout).
    Done(Result<(), Error>),
}

/// A login in progress ([`Control::begin_login`](crate::host::Control::begin_login)). Dropping it cancels the login.
#[derive(Debug)]
pub struct Login {
    events: mpsc::Receiver<LoginEvent>,
    _cancel: oneshot::Sender<()>,
}

impl Login {
    /// The next event; `None` after [`LoginEvent::Done`].
    pub async fn next(&mut self) -> Option<LoginEvent> {
        self.events.recv().await
    }
}

/// The `"auth": "oauth"` entry `name`: not found if there is no such server, invalid if
/// it is not one that logs in.
fn oauth_server(config: &Config, name: &str) -> Result<HttpServer, ControlError> {
    if config.server(name).is_none() {
        return Err(ControlError::NotFound(format!(
            "no server named {name:?} in the config; add it first"
        )));
    }
    oauth::oauth_entry(config, name).map_err(|e| ControlError::Invalid(e.to_string()))
}

/// Whether a redirect URI is one the loopback listener can serve.
pub(crate) fn is_loopback_redirect(uri: &str) -> bool {
    uri.strip_prefix("http://localhost:")
        .or_else(|| uri.strip_prefix("http://127.0.0.1:"))
        .and_then(|rest| {
            let (port, path) = rest.split_at(rest.find('/')?);
            Some(port.parse::<u16>().is_ok() && path.starts_with('/'))
        })
        .unwrap_or(false)
}

impl OAuthState {
    pub(super) fn new(store: Arc<dyn TokenStore>) -> Self {
        OAuthState {
            store,
            logins: Arc::default(),
        }
    }

    /// Sets the pre-registered client of the `"auth": "oauth"` server `name` in `config`
    /// (which the caller saves, holding the file's lock), its secret in the token store;
    /// returns the redirect URI in force.
    pub(super) fn set_client(
        &self,
        config: &mut Config,
        name: &str,
        client: &OAuthClient,
    ) -> Result<String, ControlError> {
        if client.client_id.is_empty() {
            return Err(ControlError::Invalid(
                "the client id is empty; give the id the authorization server issued".into(),
            ));
        }
        let redirect_uri = client
            .redirect_uri
            .clone()
            .unwrap_or_else(|| DEFAULT_REDIRECT_URI.to_string());
        if !is_loopback_redirect(&redirect_uri) {
            return Err(ControlError::Invalid(format!(
                "redirect_uri {redirect_uri:?} is not http://localhost:PORT/PATH or http://127.0.0.1:PORT/PATH, which the login listener serves"
            )));
        }
        let mut http = oauth_server(config, name)?;
        oauth::save_client_secret(
            self.store.as_ref(),
            name,
            &http.url,
            &client.client_id,
            client.client_secret.as_ref().map(|s| s.expose()),
        )
        .map_err(|e| ControlError::Failed(format!("cannot keep the client secret: {e}")))?;
        http.oauth_client_id = Some(client.client_id.clone());
        http.oauth_client_secret = None;
        http.oauth_redirect_uri = client.redirect_uri.clone();
        config
            .set_server(name, &ServerConfig::Http(http))
            .map_err(|e| ControlError::Invalid(e.to_string()))?;
        Ok(redirect_uri)
    }

    /// Forgets the tokens of the `"auth": "oauth"` server `name` of `config`.
    pub(super) async fn logout(&self, config: &Config, name: &str) -> Result<(), ControlError> {
        let http = oauth_server(config, name)?;
        oauth::server_oauth(name, &http, self.store.clone())
            .logout()
            .await
            .map_err(|e| ControlError::Failed(e.to_string()))
    }

    /// Starts a login to the `"auth": "oauth"` server `name` of `config` on a task of its
    /// own (see [`Control::begin_login`](super::Control::begin_login)); a successful login
    /// reconnects the server if `manager` runs it.
    pub(super) fn begin(
        &self,
        config: Config,
        name: &str,
        options: LoginOptions,
        manager: Manager,
    ) -> Result<Login, ControlError> {
        oauth_server(&config, name)?;
        let (paste_tx, paste_rx) = mpsc::channel(4);
        let (done_tx, done_rx) = watch::channel(None);
        let login_state = Arc::new(Mutex::new(None));
        {
            let mut logins = self.logins.lock().expect("logins lock");
            if logins.contains_key(name) {
                return Err(ControlError::Conflict(format!(
                    "a login to {name} is already in progress; finish or cancel it first"
                )));
            }
            logins.insert(
                name.to_string(),
                Pending {
                    paste: paste_tx,
                    done: done_rx,
                    state: login_state.clone(),
                },
            );
        }
        let (events, events_rx) = mpsc::channel(8);
        let (cancel_tx, mut cancel_rx) = oneshot::channel::<()>();
        let shown = events.clone();
        let mut agent = LoopbackAgent::new().with_paste(paste_rx);
        agent.open_browser = options.open_browser;
        agent.timeout = options.timeout;
        agent.show_url = Arc::new(move |url| {
            *login_state.lock().expect("login state lock") = CallbackParams::parse(url)
                .state
                .map(|s| s.expose().to_string());
            let _ = shown.try_send(LoginEvent::Url(url.to_string()));
        });
        let (store, logins) = (self.store.clone(), self.logins.clone());
        let name = name.to_string();
        tokio::spawn(async move {
            let login = oauth::login(&config, &name, store.clone(), &agent);
            let outcome = tokio::select! {
                r = tokio::time::timeout(options.timeout + Duration::from_secs(5), login) => match r {
                    Ok(Ok(())) => Ok(()),
                    Ok(Err(e)) => Err(e),
                    Err(_) => Err(Error::new(&name, ErrorKind::Timeout(options.timeout)).during("login")),
                },
                _ = &mut cancel_rx => Err(Error::new(&name, ErrorKind::Auth("the login was cancelled before it ended".into()))),
            };
            drop(agent);
            logins.lock().expect("logins lock").remove(&name);
            if outcome.is_ok()
                && let Some(note) = oauth::login_note(&config, &name, store)
            {
                let _ = events.try_send(LoginEvent::Note(note));
            }
            let running = manager.status().iter().any(|s| s.name == name);
            if outcome.is_ok()
                && running
                && let Err(e) = manager.reconnect_server(&name).await
            {
                tracing::warn!(server = %name, "logged in, but the reconnect failed: {e}");
            }
            let _ = done_tx.send(Some(outcome.clone()));
            let _ = tokio::time::timeout(
                Duration::from_secs(5),
                events.send(LoginEvent::Done(outcome)),
            )
            .await;
        });
        Ok(Login {
            events: events_rx,
            _cancel: cancel_tx,
        })
    }

    /// Completes the login to `name` in progress with the URL the browser ended on (see
    /// [`Control::complete_login_by_paste`](super::Control::complete_login_by_paste)).
    pub(super) async fn paste(&self, name: &str, url: &str) -> Result<(), ControlError> {
        let params = CallbackParams::parse(url);
        if params.code.is_none() && params.error.is_none() {
            return Err(ControlError::Invalid(
                "the URL has no code= or error=; paste the whole URL the browser ended on".into(),
            ));
        }
        let (paste, mut done) = {
            let logins = self.logins.lock().expect("logins lock");
            let pending = logins.get(name).ok_or_else(|| {
                ControlError::NotFound(format!(
                    "no login to {name} is in progress; start one first"
                ))
            })?;
            let state = pending.state.lock().expect("login state lock").clone();
            let Some(state) = state else {
                return Err(ControlError::Conflict(format!(
                    "the login to {name} has not shown its authorization URL yet; paste the URL the browser ends on after that"
                )));
            };
            // Refused here, at once: the login goes on, waiting for its own redirect.
            if !params.answers(Some(&state)) {
                return Err(ControlError::Invalid(format!(
                    "that URL is not the redirect of this login to {name} (its state does not match): paste the URL the browser ended on for this login"
                )));
            }
            (pending.paste.clone(), pending.done.clone())
        };
        if paste.send(url.trim().to_string()).await.is_err() {
            return Err(ControlError::Conflict(format!(
                "the login to {name} ended before the URL arrived; start it again"
            )));
        }
        let outcome = done
            .wait_for(Option::is_some)
            .await
            .map_err(|_| ControlError::Failed("the login ended without an outcome".into()))?
            .clone();
        match outcome {
            Some(Ok(())) => Ok(()),
            Some(Err(e)) => Err(ControlError::LoginFailed(Box::new(e))),
            None => unreachable!("waited for an outcome"),
        }
    }
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
