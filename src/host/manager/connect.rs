//! From a config entry to a connected client, and its first tool list.

use super::*;

/// Connects one configured server. The one place that turns a config entry into a client:
/// stdio entries start their command (with `$VAR` expanded); `url` entries connect over
/// HTTP with their headers expanded; `"auth": "oauth"` entries carry the server's
/// [`crate::auth::OAuth`] as the transport's authorizer, with the tokens of
/// [`crate::host::oauth::token_store`], and fail with "oauth login required, run /mcp → NAME →
/// login" (state `needs login`) while there is no token, unless their grant needs no person
/// (client credentials, workload identity: tokens come at the server's first 401).
pub async fn connect_server(
    name: &str,
    config: &ServerConfig,
    options: &ClientOptions,
) -> Result<Client> {
    #[cfg(feature = "oauth")]
    {
        connect_server_with_store(name, config, options, crate::host::oauth::token_store()).await
    }
    #[cfg(not(feature = "oauth"))]
    {
        connect_entry(name, config, options).await
    }
}

/// [`connect_server`] with OAuth tokens kept in `store`.
#[cfg(feature = "oauth")]
pub async fn connect_server_with_store(
    name: &str,
    config: &ServerConfig,
    options: &ClientOptions,
    store: Arc<dyn crate::auth::TokenStore>,
) -> Result<Client> {
    if let ServerConfig::Http(http) = config
        && http.auth.as_deref() == Some("oauth")
    {
        let oauth = crate::host::oauth::server_oauth(name, http, store);
        // A store that cannot be read (a locked keyring) says so, rather than "log in". A
        // machine grant gets its tokens at the first 401; a person must log in first.
        if oauth.stored_tokens()?.is_none() && !oauth.is_machine_grant() {
            return Err(Error::new(name, ErrorKind::LoginRequired));
        }
        let mut config = http.http_config();
        config.authorizer = Some(Arc::new(oauth));
        return Client::connect_http(name, &config, options.clone()).await;
    }
    connect_entry(name, config, options).await
}

pub(super) async fn connect_entry(
    name: &str,
    config: &ServerConfig,
    options: &ClientOptions,
) -> Result<Client> {
    match config {
        #[cfg(feature = "stdio")]
        ServerConfig::Stdio(stdio) => {
            Client::connect_stdio(name, &stdio.expanded(), options.clone()).await
        }
        #[cfg(not(feature = "stdio"))]
        ServerConfig::Stdio(_) => {
            let _ = options;
            Err(Error::new(
                name,
                ErrorKind::Usage(
                    "this build has no stdio transport; build with the \"stdio\" feature".into(),
                ),
            ))
        }
        ServerConfig::Http(http) if http.auth.as_deref() == Some("oauth") => Err(Error::new(
            name,
            ErrorKind::Usage(
                "this build has no OAuth; build with the \"oauth\" feature to log in".into(),
            ),
        )),
        #[cfg(feature = "http")]
        ServerConfig::Http(http) => {
            Client::connect_http(name, &http.http_config(), options.clone()).await
        }
        #[cfg(not(feature = "http"))]
        ServerConfig::Http(_) => Err(Error::new(
            name,
            ErrorKind::Usage(
                "this build has no HTTP transport; build with the \"http\" feature".into(),
            ),
        )),
    }
}

/// A server connected and listed.
pub(super) struct Connected {
    pub(super) client: Arc<Client>,
    pub(super) notifications: broadcast::Receiver<Notification>,
    pub(super) tools: Vec<Tool>,
}

pub(super) async fn connect_and_list(
    name: String,
    config: ServerConfig,
    manager_options: &ManagerOptions,
) -> Result<Connected> {
    let eras = manager_options.eras.as_deref();
    let mut client_options = manager_options.client.clone();
    if let Some(eras) = eras {
        client_options.era = eras.recall(&name, &config, client_options.era);
    }
    let options = &client_options;
    #[cfg(feature = "oauth")]
    let client = match &manager_options.token_store {
        Some(store) => connect_server_with_store(&name, &config, options, store.clone()).await?,
        None => connect_server(&name, &config, options).await?,
    };
    #[cfg(not(feature = "oauth"))]
    let client = connect_server(&name, &config, options).await?;
    if let Some(eras) = eras {
        eras.remember(&name, &config, client.details().era);
    }
    let client = Arc::new(client);
    // Subscribe before listing, so a change made while the list is read is not missed.
    let notifications = client.notifications();
    if !client.details().has_capability("tools") {
        return Ok(Connected {
            client,
            notifications,
            tools: Vec::new(),
        });
    }
    match client.list_tools().await {
        Ok(tools) => Ok(Connected {
            client,
            notifications,
            tools,
        }),
        Err(e) => {
            client.close().await;
            Err(e)
        }
    }
}
