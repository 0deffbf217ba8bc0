//! OAuth for `"auth": "oauth"` entries: the settings read from the entry, the token store
//! the host uses, and the login behind `agenvoy-mcp login NAME` (and `/mcp → NAME → login`).
//!
//! A pre-registered client's secret is either the entry's `oauth_client_secret` (usually a
//! `${VAR}` reference) or, when given through the management API, kept in the token store
//! under `client_secret:<server>` together with the server URL and client id it belongs to:
//! it is used only while the entry still names that URL and client id.
//!
//! The grant: `oauth_workload_assertion` (a `$VAR` or file path holding the workload's JWT)
//! makes it workload identity; `"oauth_grant": "client_credentials"` the client credentials
//! grant; else a person logs in (authorization code). `oauth_client_private_key` (a `$VAR` or
//! file path) makes the pre-registered client authenticate with an ES256 `private_key_jwt`.

use super::config::{Config, HttpServer, ServerConfig, config_dir};
use super::expand::expand_env;
use crate::auth::{
    Grant, OAuth, OAuthConfig, PreRegistered, SecretSource, StoreError, TokenStore, UserAgent,
};
use crate::error::{Error, ErrorKind, Result};
use crate::secret::Secret;
use serde::{Deserialize, Serialize};
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
                .filter(|s| !s.is_empty())
                .map(Secret::from),
            redirect_uri: http.oauth_redirect_uri.clone(),
            private_key: http
                .oauth_client_private_key
                .as_deref()
                .map(secret_reference),
        });
    }
    config.client_metadata_url = http.oauth_client_metadata_url.clone();
    config.proxy = http.expanded_proxy();
    if let Some(assertion) = &http.oauth_workload_assertion {
        config.grant = Grant::WorkloadIdentity {
            assertion: secret_reference(assertion),
        };
    } else if http.oauth_grant.as_deref() == Some("client_credentials") {
        config.grant = Grant::ClientCredentials;
    }
    config
}

/// Where a secret an entry names is: `$VAR` or `${VAR}` alone is an environment variable;
/// any other value is a file path, with `$VAR` expanded in it. Both are read when needed.
pub fn secret_reference(value: &str) -> SecretSource {
    let variable = value
        .strip_prefix("${")
        .and_then(|v| v.strip_suffix('}'))
        .or_else(|| value.strip_prefix('$'))
        .filter(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'));
    match variable {
        Some(name) => SecretSource::Env(name.to_string()),
        None => SecretSource::File(expand_env(value).into()),
    }
}

/// The OAuth of one entry, with its tokens in `store` (and the client secret, when the
/// entry has none and `store` holds one for this URL and client id).
pub fn server_oauth(name: &str, http: &HttpServer, store: Arc<dyn TokenStore>) -> OAuth {
    let mut config = oauth_config(name, http);
    if let Some(client) = config.client.as_mut()
        && client.client_secret.is_none()
    {
        client.client_secret = stored_client_secret(store.as_ref(), name, http).map(Secret::from);
    }
    OAuth::new(config, store)
}

/// The token store key of a client secret given through the API.
pub fn client_secret_key(server: &str) -> String {
    format!("client_secret:{server}")
}

/// A client secret in the token store, and what it belongs to.
#[derive(Serialize, Deserialize)]
struct StoredSecret {
    server_url: String,
    client_id: String,
    client_secret: String,
}

/// Keeps the secret of the pre-registered client `client_id` of server `name` at `url` in
/// `store` (`None` forgets any). The errors carry no secret.
pub fn save_client_secret(
    store: &dyn TokenStore,
    name: &str,
    url: &str,
    client_id: &str,
    secret: Option<&str>,
) -> std::result::Result<(), StoreError> {
    let key = client_secret_key(name);
    match secret {
        None => store.delete(&key),
        Some(secret) => {
            let stored = StoredSecret {
                server_url: url.to_string(),
                client_id: client_id.to_string(),
                client_secret: secret.to_string(),
            };
            store.save(
                &key,
                &serde_json::to_string(&stored).expect("JSON serializes"),
            )
        }
    }
}

fn stored_client_secret(store: &dyn TokenStore, name: &str, http: &HttpServer) -> Option<String> {
    let text = store.load(&client_secret_key(name)).ok()??;
    let stored: StoredSecret = serde_json::from_str(&text).ok()?;
    (Some(&stored.client_id) == http.oauth_client_id.as_ref() && stored.server_url == http.url)
        .then_some(stored.client_secret)
}

/// Forgets everything `store` holds for server `name`: its tokens, their DPoP key and its
/// client secret (a server added later under the same name starts clean).
pub fn forget_server(store: &dyn TokenStore, name: &str) -> std::result::Result<(), StoreError> {
    store.delete(&crate::auth::store::tokens_key(name))?;
    store.delete(&crate::auth::dpop_key_name(name))?;
    store.delete(&client_secret_key(name))
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

/// What the user should know of the login to `name` just made, if anything
/// ([`StoredTokens::login_note`](crate::auth::StoredTokens::login_note): no refresh token was
/// issued).
pub fn login_note(config: &Config, name: &str, store: Arc<dyn TokenStore>) -> Option<String> {
    let http = oauth_entry(config, name).ok()?;
    server_oauth(name, &http, store)
        .stored_tokens()
        .ok()??
        .login_note()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::MemoryStore;

    #[test]
    fn a_stored_client_secret_goes_only_to_its_url_and_client() {
        let store: Arc<dyn TokenStore> = Arc::new(MemoryStore::new());
        let entry = HttpServer::new("https://a.test/mcp")
            .with_auth("oauth")
            .with_oauth_client_id("c1");
        let secret_of = |http: &HttpServer| {
            let oauth = server_oauth("s", http, store.clone());
            oauth.config().client.as_ref()?.client_secret.clone()
        };
        assert_eq!(secret_of(&entry), None);
        save_client_secret(store.as_ref(), "s", &entry.url, "c1", Some("sec")).unwrap();
        assert_eq!(secret_of(&entry).as_ref().map(Secret::expose), Some("sec"));
        let moved = HttpServer {
            url: "https://b.test/mcp".into(),
            ..entry.clone()
        };
        assert_eq!(secret_of(&moved), None, "another URL");
        let other = HttpServer {
            oauth_client_id: Some("c2".into()),
            ..entry.clone()
        };
        assert_eq!(secret_of(&other), None, "another client");
        let in_file = HttpServer {
            oauth_client_secret: Some("from-file".into()),
            ..entry.clone()
        };
        assert_eq!(
            secret_of(&in_file).as_ref().map(Secret::expose),
            Some("from-file")
        );
        forget_server(store.as_ref(), "s").unwrap();
        assert_eq!(secret_of(&entry), None);
    }

    #[test]
    fn entries_pick_their_grant_and_secret_references() {
        let entry =
            |v: serde_json::Value| match crate::host::config::ServerConfig::from_value("s", &v) {
                Ok(ServerConfig::Http(h)) => oauth_config("s", &h),
                other => panic!("{other:?}"),
            };
        let config = entry(serde_json::json!({"url": "https://h/mcp", "auth": "oauth"}));
        assert!(matches!(config.grant, Grant::AuthorizationCode));
        let config = entry(serde_json::json!({"url": "https://h/mcp", "auth": "oauth",
            "oauth_grant": "client_credentials", "oauth_client_id": "c",
            "oauth_client_private_key": "${KEY_PEM}"}));
        assert!(matches!(config.grant, Grant::ClientCredentials));
        let key = config.client.unwrap().private_key.unwrap();
        assert!(
            matches!(&key, SecretSource::Env(n) if n == "KEY_PEM"),
            "{key:?}"
        );
        let config = entry(serde_json::json!({"url": "https://h/mcp", "auth": "oauth",
            "oauth_workload_assertion": "/var/run/secrets/tokens/mcp"}));
        let Grant::WorkloadIdentity { assertion } = config.grant else {
            panic!("{:?}", config.grant)
        };
        assert!(
            matches!(&assertion, SecretSource::File(p) if p.to_str() == Some("/var/run/secrets/tokens/mcp")),
            "{assertion:?}"
        );
        assert!(matches!(secret_reference("$TOKEN"), SecretSource::Env(n) if n == "TOKEN"));
        let home = std::env::var("HOME").unwrap_or_default();
        assert!(
            matches!(secret_reference("$HOME/t"), SecretSource::File(p) if p.to_str() == Some(&format!("{home}/t")))
        );
    }
}
