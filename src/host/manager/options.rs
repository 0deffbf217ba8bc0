//! [`ManagerOptions`]: how the manager connects servers and follows them.

use crate::client::ClientOptions;
use crate::host::era_memory::EraMemory;
use crate::host::events::EventBus;
use crate::host::gate::{ConfirmCallback, default_allowlist_path};
use crate::host::pending_requests::{ElicitationHandler, SamplingHandler};
use crate::host::tool_search::ToolSearch;
use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// How the manager connects servers and follows them.
#[derive(Clone)]
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
    /// Answers the servers' elicitation requests, told which server asks (a
    /// [`PendingRequests`](crate::host::PendingRequests) board's, or the embedder's own); `None`:
    /// the client does not offer elicitation (the [`client`](Self::client) options' handler,
    /// if any, is used as it is).
    pub elicitation: Option<ElicitationHandler>,
    /// Answers the servers' sampling requests, told which server asks; `None`: the client does
    /// not offer sampling (the [`client`](Self::client) options' handler, if any, is used).
    pub sampling: Option<SamplingHandler>,
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
            .finish()
    }
}
