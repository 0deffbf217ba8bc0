//! [`ManagerOptions`]: how the manager connects servers and follows them.

use super::kept_catalog::{CatalogStore, FileCatalogStore};
use crate::client::ClientOptions;
use crate::host::era_memory::EraMemory;
use crate::host::events::EventBus;
use crate::host::gate::{ConfirmCallback, ConfirmRequest, Decision, default_allowlist_path};
use crate::host::pending_requests::{ElicitationHandler, SamplingHandler};
use crate::host::tool_search::ToolSearch;
use crate::protocol::server_requests::{
    ElicitationAnswer, ElicitationRequest, SamplingAnswer, SamplingRequest,
};
use crate::wire::jsonrpc::ErrorObject;
use std::fmt;
use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// How the manager connects servers and follows them. Build it with
/// [`ManagerOptions::default`] and the `with_*` setters:
///
/// ```
/// use agenvoy_mcp::ElicitationAnswer;
/// use agenvoy_mcp::host::ManagerOptions;
/// use std::time::Duration;
///
/// let options = ManagerOptions::default()
///     .with_debounce(Duration::from_millis(50))
///     .with_elicitation(|server, _request| async move {
///         println!("{server} asks; declined");
///         Ok(ElicitationAnswer::Decline)
///     });
/// assert!(options.elicitation.is_some());
/// ```
#[derive(Clone)]
#[non_exhaustive]
pub struct ManagerOptions {
    /// Options of every client (timeouts, cap, handlers).
    pub client: ClientOptions,
    /// The allowlist file.
    pub allowlist_path: PathBuf,
    /// Asks the user about calls in `confirm` mode that are not allowlisted.
    pub confirm: Option<ConfirmCallback>,
    /// How long a burst of `tools/list_changed` notifications is waited out before the
    /// server's tools are listed again.
    pub debounce: Duration,
    /// How often a server that does not declare `tools.listChanged` is listed again.
    pub poll_interval: Duration,
    /// Where OAuth tokens are kept; `None`: [`crate::host::token_store`] (the keychain, or
    /// a 0600 file).
    #[cfg(feature = "oauth")]
    pub token_store: Option<Arc<dyn crate::auth::TokenStore>>,
    /// Where the servers found of the initialize era are remembered, so their next start
    /// skips the `server/discover` probe (see [`EraMemory`]); `None`: every start probes.
    pub eras: Option<Arc<EraMemory>>,
    /// When tool search replaces the definitions
    /// ([`Manager::offered_tools`](crate::host::Manager::offered_tools)); `None`: the
    /// config's top-level `"tool_search"`, else off.
    pub tool_search: Option<ToolSearch>,
    /// Where the manager tells what happens
    /// ([`Manager::events`](crate::host::Manager::events)): state changes, list
    /// changes, updated resources, servers' log messages.
    pub events: EventBus,
    /// Answers the servers' elicitation requests, told which server asks
    /// ([`ManagerOptions::with_elicitation`]); `None`: the client does not offer elicitation
    /// (the [`client`](Self::client) options' handler, if any, is used as it is).
    pub elicitation: Option<ElicitationHandler>,
    /// Answers the servers' sampling requests, told which server asks
    /// ([`ManagerOptions::with_sampling`]); `None`: the client does not offer sampling (the
    /// [`client`](Self::client) options' handler, if any, is used).
    pub sampling: Option<SamplingHandler>,
    /// Where the catalogs of on-demand servers (`"start": "on_demand"`) are kept between
    /// launches; `None`: a [`FileCatalogStore`] in the config folder's `catalogs/`.
    pub catalog_store: Option<Arc<dyn CatalogStore>>,
}

impl ManagerOptions {
    /// With `client` as every client's options (timeouts, cap, handlers).
    pub fn with_client(mut self, client: ClientOptions) -> Self {
        self.client = client;
        self
    }

    /// With the allowlist kept in the file `path`.
    pub fn with_allowlist_path(mut self, path: impl Into<PathBuf>) -> Self {
        self.allowlist_path = path.into();
        self
    }

    /// With `ask` asking the user about calls in `confirm` mode that are not allowlisted:
    /// an async closure from the call to the user's [`Decision`].
    pub fn with_confirm<F, Fut>(mut self, ask: F) -> Self
    where
        F: Fn(ConfirmRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Decision> + Send + 'static,
    {
        self.confirm = Some(Arc::new(move |request| Box::pin(ask(request))));
        self
    }

    /// With `debounce` waited out after a burst of `tools/list_changed` notifications.
    pub fn with_debounce(mut self, debounce: Duration) -> Self {
        self.debounce = debounce;
        self
    }

    /// With a server that does not declare `tools.listChanged` listed again every `interval`.
    pub fn with_poll_interval(mut self, interval: Duration) -> Self {
        self.poll_interval = interval;
        self
    }

    /// With OAuth tokens kept in `store`.
    #[cfg(feature = "oauth")]
    pub fn with_token_store(mut self, store: Arc<dyn crate::auth::TokenStore>) -> Self {
        self.token_store = Some(store);
        self
    }

    /// With the servers of the initialize era remembered in `eras`.
    pub fn with_eras(mut self, eras: Arc<EraMemory>) -> Self {
        self.eras = Some(eras);
        self
    }

    /// With tool search as `search` says, whatever the config says.
    pub fn with_tool_search(mut self, search: ToolSearch) -> Self {
        self.tool_search = Some(search);
        self
    }

    /// With what happens told on `events`.
    pub fn with_events(mut self, events: EventBus) -> Self {
        self.events = events;
        self
    }

    /// With `answer` answering the servers' `elicitation/create`, told which server asks: an
    /// async closure, as `|server, request| async move { Ok(ElicitationAnswer::Decline) }`,
    /// or a board's
    /// ([`PendingRequests::elicitation_handler`](crate::host::PendingRequests::elicitation_handler)),
    /// which waits for the panel or
    /// the API to answer.
    pub fn with_elicitation<F, Fut>(mut self, answer: F) -> Self
    where
        F: Fn(String, ElicitationRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ElicitationAnswer, ErrorObject>> + Send + 'static,
    {
        self.elicitation = Some(Arc::new(move |server, request| {
            Box::pin(answer(server, request))
        }));
        self
    }

    /// With `answer` answering the servers' `sampling/createMessage`, told which server asks:
    /// an async closure, or a board's
    /// ([`PendingRequests::sampling_handler`](crate::host::PendingRequests::sampling_handler)).
    pub fn with_sampling<F, Fut>(mut self, answer: F) -> Self
    where
        F: Fn(String, SamplingRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<SamplingAnswer, ErrorObject>> + Send + 'static,
    {
        self.sampling = Some(Arc::new(move |server, request| {
            Box::pin(answer(server, request))
        }));
        self
    }
}

impl ManagerOptions {
    /// With the catalogs of on-demand servers kept in `store`.
    pub fn with_catalog_store(mut self, store: Arc<dyn CatalogStore>) -> Self {
        self.catalog_store = Some(store);
        self
    }

    /// The catalog store: [`ManagerOptions::catalog_store`], else the config folder's.
    pub(crate) fn catalogs(&self) -> Arc<dyn CatalogStore> {
        self.catalog_store
            .clone()
            .unwrap_or_else(|| Arc::new(FileCatalogStore::in_config_dir()))
    }
}

impl Default for ManagerOptions {
    fn default() -> Self {
        ManagerOptions {
            client: ClientOptions::default(),
            allowlist_path: default_allowlist_path(),
            confirm: None,
            debounce: Duration::from_millis(200),
            poll_interval: Duration::from_secs(300),
            #[cfg(feature = "oauth")]
            token_store: None,
            eras: None,
            tool_search: None,
            events: EventBus::new(),
            elicitation: None,
            sampling: None,
            catalog_store: None,
        }
    }
}

impl fmt::Debug for ManagerOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ManagerOptions")
            .field("client", &self.client)
            .field("allowlist_path", &self.allowlist_path)
            .field("confirm", &self.confirm.is_some())
            .field("debounce", &self.debounce)
            .field("poll_interval", &self.poll_interval)
            .field("tool_search", &self.tool_search)
            .field("elicitation", &self.elicitation.is_some())
            .field("sampling", &self.sampling.is_some())
            .field("catalog_store", &self.catalog_store.is_some())
            .finish()
    }
}
