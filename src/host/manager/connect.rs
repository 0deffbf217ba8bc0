//! From a config entry to a connected client, and its first tool list.

use super::catalog::{Catalog, list_catalog};
use super::options::ManagerOptions;
use crate::client::{Client, ClientOptions};
use crate::error::{Error, ErrorKind, Result};
use crate::host::config::ServerConfig;
use crate::protocol::types::Tool;
use crate::transport::{Inbound, Transport};
use crate::wire::jsonrpc::Notification;
use std::sync::Arc;
use tokio::sync::{broadcast, mpsc, watch};

/// Connects one configured server. The one place that turns a config entry into a client:
/// stdio entries start their command (with `$VAR` expanded); `url` entries connect over
/// HTTP with their headers expanded; `"auth": "oauth"` entries carry the server's
/// [`crate::auth::OAuth`] as the transport's authorizer, with the tokens of
/// [`crate::host::oauth::token_store`], and fail with "oauth login required" (state `needs
/// login`) while there is no token, unless their grant needs no person
/// (client credentials, workload identity: tokens come at the server's first 401).
pub async fn connect_server(
    name: &str,
    config: &ServerConfig,
    options: &ClientOptions,
) -> Result<Client> {
    let options = entry_options(config, options.clone());
    let (transport, inbound) = open(name, config, &options, None)?;
    Client::connect(name, transport, inbound, options).await
}

/// `options` with the timeouts `config` sets in place of the defaults.
fn entry_options(config: &ServerConfig, mut options: ClientOptions) -> ClientOptions {
    let timeouts = config.timeouts();
    options.timeout = timeouts.request.unwrap_or(options.timeout);
    options.startup_timeout = timeouts.startup.or(options.startup_timeout);
    options
}

/// [`connect_server`] with OAuth tokens kept in `store`.
#[cfg(feature = "oauth")]
pub async fn connect_server_with_store(
    name: &str,
    config: &ServerConfig,
    options: &ClientOptions,
    store: Arc<dyn crate::auth::TokenStore>,
) -> Result<Client> {
    let options = entry_options(config, options.clone());
    let (transport, inbound) = open(name, config, &options, Some(store))?;
    Client::connect(name, transport, inbound, options).await
}

/// Where OAuth tokens are kept, when the build has OAuth (`None`: the process's store).
#[cfg(feature = "oauth")]
type Store = Option<Arc<dyn crate::auth::TokenStore>>;
#[cfg(not(feature = "oauth"))]
type Store = Option<std::convert::Infallible>;

/// The transport of a config entry, started (a stdio server runs) but not yet connected.
fn open(
    name: &str,
    config: &ServerConfig,
    options: &ClientOptions,
    store: Store,
) -> Result<(Arc<dyn Transport>, mpsc::Receiver<Inbound>)> {
    let _ = (options, &store);
    match config {
        #[cfg(feature = "stdio")]
        ServerConfig::Stdio(stdio) => {
            let (transport, inbound) = crate::transport::stdio::StdioTransport::spawn(
                name,
                &stdio.expanded(),
                options.limits(),
            )?;
            Ok((Arc::new(transport), inbound))
        }
        #[cfg(not(feature = "stdio"))]
        ServerConfig::Stdio(_) => Err(Error::new(name, ErrorKind::FeatureMissing("stdio"))),
        #[cfg(not(feature = "oauth"))]
        ServerConfig::Http(http) if http.auth.as_deref() == Some("oauth") => {
            Err(Error::new(name, ErrorKind::FeatureMissing("oauth")))
        }
        #[cfg(feature = "http")]
        ServerConfig::Http(http) => {
            let config = http.http_config();
            #[cfg(feature = "oauth")]
            let config = with_oauth(name, http, config, store)?;
            let (transport, inbound) =
                crate::transport::http::HttpTransport::new(name, &config, options.limits())?;
            Ok((Arc::new(transport), inbound))
        }
        #[cfg(not(feature = "http"))]
        ServerConfig::Http(_) => Err(Error::new(name, ErrorKind::FeatureMissing("http"))),
    }
}

/// `config` with the server's OAuth as its authorizer, for an `"auth": "oauth"` entry.
#[cfg(feature = "oauth")]
fn with_oauth(
    name: &str,
    http: &crate::host::config::HttpServer,
    mut config: crate::transport::http::HttpConfig,
    store: Store,
) -> Result<crate::transport::http::HttpConfig> {
    if http.auth.as_deref() != Some("oauth") {
        return Ok(config);
    }
    let store = store.unwrap_or_else(crate::host::oauth::token_store);
    let oauth = crate::host::oauth::server_oauth(name, http, store);
    // A store that cannot be read (a locked keyring) says so, rather than "log in". A machine
    // grant gets its tokens at the first 401; a person must log in first.
    if oauth.stored_tokens()?.is_none() && !oauth.is_machine_grant() {
        return Err(Error::new(name, ErrorKind::LoginRequired));
    }
    config.authorizer = Some(Arc::new(oauth));
    Ok(config)
}

/// A server connected and listed.
pub(super) struct Connected {
    pub(super) client: Arc<Client>,
    pub(super) notifications: broadcast::Receiver<Notification>,
    pub(super) tools: Vec<Tool>,
    pub(super) catalog: Catalog,
}

/// Connects server `name` and lists its tools, unless `closing` turns true first: then the
/// transport is closed (a stdio server and its group are ended) before this returns.
pub(super) async fn connect_and_list(
    name: String,
    config: ServerConfig,
    manager_options: &ManagerOptions,
    mut closing: watch::Receiver<bool>,
) -> Result<Connected> {
    let eras = manager_options.eras.as_deref();
    let mut options = entry_options(&config, manager_options.client.clone());
    options.handlers = server_handlers(&name, manager_options, options.handlers);
    if let Some(eras) = eras {
        options.era = eras.recall(&name, &config, options.era);
    }
    #[cfg(feature = "oauth")]
    let store = manager_options.token_store.clone();
    #[cfg(not(feature = "oauth"))]
    let store = None;
    let closed = || Error::new(&name, ErrorKind::Closed("the manager was closed".into()));
    if *closing.borrow() {
        return Err(closed());
    }
    let (transport, inbound) = open(&name, &config, &options, store)?;
    let connecting = Client::connect(&name, transport.clone(), inbound, options);
    let client = tokio::select! {
        client = connecting => client?,
        () = closed_signal(&mut closing) => {
            transport.close().await;
            return Err(closed());
        }
    };
    if let Some(eras) = eras {
        eras.remember(&name, &config, client.details().era);
    }
    let client = Arc::new(client);
    // Subscribe before listing, so a change made while the list is read is not missed.
    let notifications = client.notifications();
    let tools = async {
        match client.details().has_capability("tools") {
            true => client.list_tools().await,
            false => Ok(Vec::new()),
        }
    };
    // Resources and prompts are listed beside the tools, so they add no round trip.
    let listed = tokio::select! {
        (tools, catalog) = async { tokio::join!(tools, list_catalog(&name, &client)) } => tools.map(|t| (t, catalog)),
        () = closed_signal(&mut closing) => Err(closed()),
    };
    match listed {
        Ok((tools, catalog)) => Ok(Connected {
            client,
            notifications,
            tools,
            catalog,
        }),
        Err(e) => {
            client.close().await;
            Err(e)
        }
    }
}

/// The client's handlers with the manager's elicitation and sampling handlers in place,
/// each told that this server asks.
fn server_handlers(
    name: &str,
    options: &ManagerOptions,
    mut handlers: crate::protocol::session::Handlers,
) -> crate::protocol::session::Handlers {
    if let Some(handler) = options.elicitation.clone() {
        let name = name.to_string();
        handlers.elicitation = Some(Arc::new(move |request| handler(name.clone(), request)));
    }
    if let Some(handler) = options.sampling.clone() {
        let name = name.to_string();
        handlers.sampling = Some(Arc::new(move |request| handler(name.clone(), request)));
    }
    handlers
}

/// Returns when `closing` turns true (never, if the manager is gone: nothing can close it).
async fn closed_signal(closing: &mut watch::Receiver<bool>) {
    if closing.wait_for(|closing| *closing).await.is_err() {
        std::future::pending::<()>().await;
    }
}
