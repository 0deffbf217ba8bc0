//! What the manager knows of one server ([`Slot`]): its entry, whether it is enabled, where
//! it is, its client and last error, and the parts kept by the files beside this one: its
//! tools and filter, its catalog, its watcher.

use super::catalog::ServerCatalog;
use super::connect::Connected;
use super::visibility::ToolList;
use super::watch::{Following, Watcher};
use crate::client::{Client, ClientOptions};
use crate::error::{Error, ErrorKind, Result};
use crate::host::config::ServerConfig;
use crate::host::config_error::ConfigError;
use crate::host::status::{STATUS_LOG, ServerState, ServerStatus};
use crate::protocol::types::Tool;
use std::borrow::Cow;
use std::sync::Arc;

/// One server, as the manager keeps it (under the manager's one lock of all servers).
pub(super) struct Slot {
    config: Result<ServerConfig, ConfigError>,
    /// `"enabled": false` makes it [`ServerState::Disabled`] and keeps it so.
    enabled: bool,
    state: ServerState,
    client: Option<Arc<Client>>,
    last_error: Option<String>,
    /// Its tools, and which of them are registered.
    pub(super) tools: ToolList,
    /// Its resources, templates and prompts, and the resources followed.
    pub(super) catalog: ServerCatalog,
    watcher: Watcher,
}

impl Slot {
    pub(super) fn new(config: Result<ServerConfig, ConfigError>) -> Slot {
        let (state, last_error) = match &config {
            Ok(_) => (ServerState::Connecting, None),
            Err(e) => (ServerState::Failed, Some(e.to_string())),
        };
        Slot {
            config,
            enabled: true,
            state,
            client: None,
            last_error,
            tools: ToolList::new(),
            catalog: ServerCatalog::new(),
            watcher: Watcher::default(),
        }
    }

    /// A slot of the config's that stays unstarted (`"enabled": false`).
    pub(super) fn disabled(mut self) -> Slot {
        if self.config.is_ok() {
            self.enabled = false;
            self.state = ServerState::Disabled;
        }
        self
    }

    pub(super) fn state(&self) -> ServerState {
        self.state
    }

    pub(super) fn client(&self) -> Option<&Arc<Client>> {
        self.client.as_ref()
    }

    /// Whether `client` is still its client (not replaced, not removed).
    pub(super) fn is_current(&self, client: &Arc<Client>) -> bool {
        self.client.as_ref().is_some_and(|c| Arc::ptr_eq(c, client))
    }

    /// Whether a reconnect of all servers reconnects it (a valid entry, enabled).
    pub(super) fn reconnectable(&self) -> bool {
        self.config.is_ok() && self.enabled
    }

    /// Its instructions, once connected.
    pub(super) fn instructions(&self) -> Option<&str> {
        self.client.as_ref()?.details().instructions.as_deref()
    }

    /// The tools to register: its visible ones while it is connected, else `None`.
    pub(super) fn registrable(&self) -> Option<Cow<'_, [Tool]>> {
        (self.state == ServerState::Connected).then(|| self.tools.visible())
    }

    /// Records the outcome of connecting server `name`. Closed (`closing`) or disabled while
    /// it connected, it ends as every server does, quietly, and false is returned: no state to
    /// tell.
    pub(super) fn connected(
        &mut self,
        name: &str,
        result: Result<Connected>,
        closing: bool,
    ) -> bool {
        self.watcher.stop();
        if closing || !self.enabled {
            self.state = if self.enabled {
                ServerState::Disconnected
            } else {
                ServerState::Disabled
            };
            self.client = None;
            return false;
        }
        match result {
            Ok(connected) => {
                self.state = ServerState::Connected;
                self.last_error = None;
                self.tools.set(connected.tools);
                self.catalog.replace(connected.catalog);
                self.client = Some(connected.client);
                self.watcher.wait_on(connected.notifications);
                tracing::info!(server = %name, tools = self.tools.all().len(), "connected");
            }
            Err(e) => {
                tracing::warn!(target: STATUS_LOG, server = %name, "failed, skipping it: {e}");
                self.state = if e.needs_login() {
                    ServerState::NeedsLogin
                } else {
                    ServerState::Failed
                };
                self.last_error = Some(e.to_string());
                self.forget_lists();
                self.client = None;
            }
        }
        true
    }

    /// Records what a call through `client` found of its OAuth login: lost (`lost` is the
    /// call's error: a refused refresh, the tokens gone) makes it `needs login` with that
    /// error; a call that worked again (another process logged in) makes it `connected`.
    /// Whether its state changed.
    pub(super) fn login_seen(&mut self, client: &Arc<Client>, lost: Option<&Error>) -> bool {
        if !self.is_current(client) {
            return false;
        }
        match (lost, self.state) {
            (Some(e), ServerState::Connected) => {
                self.state = ServerState::NeedsLogin;
                self.last_error = Some(e.to_string());
                true
            }
            (None, ServerState::NeedsLogin) => {
                self.state = ServerState::Connected;
                self.last_error = None;
                true
            }
            _ => false,
        }
    }

    /// Its last error, as the event of its state tells it.
    pub(super) fn last_error(&self) -> Option<String> {
        self.last_error.clone()
    }

    /// Records a fresh tool list of `client`, if it is still its client; returns how many
    /// tools it has, or why the list was not taken (the old one stays).
    pub(super) fn refresh_tools(
        &mut self,
        name: &str,
        client: &Arc<Client>,
        result: Result<Vec<Tool>>,
    ) -> Result<usize> {
        if !self.is_current(client) {
            return Err(not_connected(name));
        }
        match result {
            Ok(tools) => {
                let count = tools.len();
                self.tools.set(tools);
                tracing::info!(server = %name, tools = count, "tool list refreshed");
                Ok(count)
            }
            Err(e) => {
                tracing::warn!(server = %name, "listing the tools again failed, keeping the old list: {e}");
                self.last_error = Some(e.to_string());
                Err(e)
            }
        }
    }

    /// Starts its watcher unless one runs (or there is nothing to follow).
    pub(super) fn watch(&mut self, name: &str, follow: Following) {
        if let (false, Some(client)) = (self.watcher.is_running(), self.client.as_ref()) {
            self.watcher.start(name, client, follow);
        }
    }

    /// Begins a reconnect: its entry, and its old client to close; the watcher stopped and
    /// the state `connecting`. An error for an invalid entry or a disabled server.
    pub(super) fn begin_reconnect(
        &mut self,
        name: &str,
    ) -> Result<(ServerConfig, Option<Arc<Client>>)> {
        let config = self
            .config
            .clone()
            .map_err(|e| Error::new(name, ErrorKind::Usage(format!("{e}; fix the config file"))))?;
        if !self.enabled {
            return Err(Error::new(name, ErrorKind::Disabled));
        }
        self.watcher.stop();
        self.state = ServerState::Connecting;
        Ok((config, self.client.take()))
    }

    /// Enables it; true if it was disabled (then it shows `connecting`, to be connected).
    pub(super) fn enable(&mut self) -> bool {
        let was_disabled = !self.enabled;
        self.enabled = true;
        if was_disabled {
            self.state = ServerState::Connecting;
        }
        was_disabled
    }

    /// Disables it: unstarted, its lists gone; returns its client, to close.
    pub(super) fn disable(&mut self) -> Option<Arc<Client>> {
        self.enabled = false;
        self.state = ServerState::Disabled;
        self.last_error = None;
        self.forget_lists();
        self.watcher.stop();
        self.client.take()
    }

    /// Stops it as the manager closes: returns its client, to close (then it is
    /// `disconnected`).
    pub(super) fn close(&mut self) -> Option<Arc<Client>> {
        self.watcher.stop();
        let client = self.client.take()?;
        self.state = ServerState::Disconnected;
        Some(client)
    }

    /// Its client, as it leaves the manager (its watcher ends with the slot).
    pub(super) fn into_client(mut self) -> Option<Arc<Client>> {
        self.client.take()
    }

    fn forget_lists(&mut self) {
        self.tools.set(Vec::new());
        self.catalog.replace(Default::default());
    }

    /// Its status; `defaults`: the client options, for the timeouts its entry does not set.
    pub(super) fn status(&self, name: &str, defaults: &ClientOptions) -> ServerStatus {
        let mut state = self.state;
        let mut last_error = self.last_error.clone();
        let closed = self
            .client
            .as_ref()
            .and_then(|c| c.session().closed_reason());
        if let Some(reason) = closed {
            state = ServerState::Disconnected;
            last_error = Some(Error::new(name, ErrorKind::Closed(reason)).to_string());
        }
        let details = self.client.as_ref().map(|c| c.details());
        let timeouts = self.config.as_ref().ok().map(ServerConfig::timeouts);
        let timeout = timeouts.and_then(|t| t.request).unwrap_or(defaults.timeout);
        let lists = self.catalog.lists();
        ServerStatus {
            name: name.to_string(),
            transport: self
                .config
                .as_ref()
                .map_or("?", ServerConfig::transport)
                .to_string(),
            era: details.map(|d| d.era),
            protocol_version: details.map(|d| d.protocol_version.clone()),
            state,
            last_error,
            tool_count: self.tools.all().len(),
            hidden_tools: self.tools.hidden(),
            resource_count: lists.resources.len(),
            template_count: lists.templates.len(),
            prompt_count: lists.prompts.len(),
            skill_count: lists.skills.len(),
            has_instructions: self.instructions().is_some_and(|i| !i.trim().is_empty()),
            timeout,
            startup_timeout: timeouts
                .and_then(|t| t.startup)
                .or(defaults.startup_timeout)
                .unwrap_or(timeout),
            proxy: self.config.as_ref().ok().and_then(proxy_route),
        }
    }
}

/// What an HTTP server's exchanges go through (see [`ServerStatus::proxy`]).
fn proxy_route(config: &ServerConfig) -> Option<String> {
    match config {
        #[cfg(feature = "http")]
        ServerConfig::Http(http) => Some(http.expanded_proxy().route_for(&http.url)),
        _ => None,
    }
}

/// The error of a server that is not connected.
pub(super) fn not_connected(name: &str) -> Error {
    Error::new(
        name,
        ErrorKind::Closed(
            "the server is not connected (see `agenvoy-mcp tools` for its last error)".into(),
        ),
    )
}
