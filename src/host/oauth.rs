//! OAuth for `"auth": "oauth"` entries: the settings read from the entry, the token store
//! the host uses, and the login behind `agenvoy-mcp login NAME` (and `/mcp → NAME → login`).

use super::config::{Config, HttpServer, ServerConfig, config_dir};
use super::expand::expand_env;
use crate::auth::{OAuth, OAuthConfig, PreRegistered, TokenStore, UserAgent};
use crate::error::{Error, ErrorKind, Result};
use std::sync::{Arc, OnceLock};

/// The process's token store: the OS keychain when one answers, else
/// `oauth-tokens.json` (mode 0600) in the config folder. One per process, chosen at its first
/// use, with a warning about the file only once a token or client secret is kept or read
/// there (see [`crate::auth::default_store`]).
pub fn token_store() -> Arc<dyn TokenStore> {
    static STORE: OnceLock<Arc<dyn TokenStore>> = OnceLock::new();
    STORE
        .get_or_init(|| crate::auth::default_store(&config_dir()))
        .clone()
}

/// The OAuth settings of an entry (`oauth_client_secret` expanded: never log the result).
pub fn oauth_config(name: &str, http: &HttpServer) -> OAuthConfig {
    let mut config = OAuthConfig::new(name, &http.url);
    if let Some(n) = &http.oauth_client_name {
        config.client_name = n.clone();
    }
    if let Some(id) = &http.oauth_client_id {
        config.client = Some(PreRegistered {
            client_id: id.clone(),
            client_secret: http
                .oauth_client_secret
                .as_deref()
                .map(expand_env)
                .filter(|s| !s.is_empty()),
            redirect_uri: http.oauth_redirect_uri.clone(),
            private_key_pem: None,
        });
    }
    config.client_metadata_url = http.oauth_client_metadata_url.clone();
    config
}

/// The OAuth of one entry, with its tokens in `store`.
pub fn server_oauth(name: &str, http: &HttpServer, store: Arc<dyn TokenStore>) -> OAuth {
    OAuth::new(oauth_config(name, http), store)
}

/// The `"auth": "oauth"` entry `name` of `config`, or an error saying what is wrong.
pub fn oauth_entry(config: &Config, name: &str) -> Result<HttpServer> {
    let usage = |why: String| Error::new(name, ErrorKind::Usage(why));
    match config.server(name) {
        None => Err(usage(format!(
            "no server named {name:?} in the config; list them with `agenvoy-mcp tools`"
        ))),
        Some(Err(e)) => Err(usage(e.to_string())),
        Some(Ok(ServerConfig::Http(http))) if http.auth.as_deref() == Some("oauth") => Ok(http),
        Some(Ok(_)) => Err(usage(format!(
            "{name} is not an OAuth server; set \"auth\": \"oauth\" in its entry to log in"
        ))),
    }
}

/// Logs in to server `name` of `config` through `agent` (a
/// [`crate::auth::LoopbackAgent`] for a person), keeping the tokens in `store`.
pub async fn login(
    config: &Config,
    name: &str,
    store: Arc<dyn TokenStore>,
    agent: &dyn UserAgent,
) -> Result<()> {
    let http = oauth_entry(config, name)?;
    server_oauth(name, &http, store)
        .login_with(Some(agent))
        .await
}
