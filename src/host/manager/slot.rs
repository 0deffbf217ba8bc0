//! What the manager knows of one server ([`Slot`]): its entry, whether it is enabled, where
//! it is, its client and last error, and the parts kept by the files beside this one: its
//! tools and filter, its catalog, its watcher.

use super::catalog::ServerCatalog;
use super::connect::Connected;
use super::kept_catalog::KeptCatalog;
use super::on_demand::Activity;
use super::visibility::ToolList;
use super::watch::{Following, Watcher};
use crate::client::{Client, ClientOptions};
use crate::error::{Error, ErrorKind, Result};
use crate::host::config::ServerConfig;
use crate::host::config_error::ConfigError;
use crate::host::start::Start;
use crate::host::status::{STATUS_LOG, ServerState, ServerStatus};
use crate::protocol::types::Tool;
use std::borrow::Cow;
use std::sync::Arc;
use std::time::Duration;

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
    /// When it runs (its entry's `"start"`).
    start: Start,
    /// Its instructions as last connected (kept while an on-demand server is idle).
    instructions: Option<String>,
    /// Its requests in flight, and when the last ended: what stops it when idle.
    pub(super) activity: Arc<Activity>,
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
            start: Start::Launch,
            instructions: None,
            activity: Arc::default(),
        }
    }

    /// With `start` saying when it runs.
    pub(super) fn with_start(mut self, start: Start) -> Slot {
        self.start = start;
        self
    }

    /// Its entry, or what is wrong with it.
    pub(super) fn config(&self) -> &Result<ServerConfig, ConfigError> {
        &self.config
    }

    /// When it runs.
    pub(super) fn start(&self) -> Start {
        self.start
    }

    /// Changes when it runs (a server made on demand keeps running until it is idle).
    pub(super) fn set_start(&mut self, start: Start) {
        self.start = start;
    }

    /// An on-demand server not started, its lists those `kept` from its last connection.
    pub(super) fn idle_with(&mut self, kept: KeptCatalog) {
        self.state = ServerState::Idle;
        self.tools.set(kept.tools);
        self.catalog.replace(kept.lists);
        self.instructions = kept.instructions;
    }

    /// What an on-demand server's catalog keeps of it now.
    pub(super) fn kept_catalog(&self) -> KeptCatalog {
        let lists = self.catalog.lists().clone();
        KeptCatalog::new(self.tools.all().to_vec(), lists, self.instructions.clone())
    }

    /// Stops an on-demand server that is idle: `idle`, its lists kept, its watcher stopped;
    /// returns its client, to close. `None` (and nothing changes) unless it is connected,
    /// on demand, idle past its timeout and follows no resource.
    /// `fill`: it was started only to fill its catalog, so any time without a request is
    /// enough.
    pub(super) fn stop_if_idle(&mut self, fill: bool) -> Option<Arc<Client>> {
        let Start::OnDemand { idle_timeout } = self.start else {
            return None;
        };
        let enough = if fill { Duration::ZERO } else { idle_timeout };
        let idle = self.activity.idle_for().is_some_and(|t| t >= enough);
        let following = !self.catalog.subscriptions().is_empty();
        if self.state != ServerState::Connected || !idle || following {
            return None;
        }
        self.watcher.stop();
        self.state = ServerState::Idle;
        self.client.take()
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

    /// Its instructions, while its tools are registered.
    pub(super) fn instructions(&self) -> Option<&str> {
        self.offers_lists()
            .then_some(self.instructions.as_deref())?
    }

    /// The tools to register: its visible ones while it offers its lists, else `None`.
    pub(super) fn registrable(&self) -> Option<Cow<'_, [Tool]>> {
        self.offers_lists().then(|| self.tools.visible())
    }

    /// Whether its lists are offered to the model: while it is connected, and for an
    /// on-demand server also while it is idle or starting, or failed to start (its kept
    /// catalog stays: the next call tries to start it again).
    pub(super) fn offers_lists(&self) -> bool {
        match self.state {
            ServerState::Connected => true,
            ServerState::Disabled => false,
            _ => self.start.is_on_demand(),
        }
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
                self.instructions = connected.client.details().instructions.clone();
                self.activity.touch();
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
                // An on-demand server's kept catalog stays (it is tried again at its next use).
                if !self.start.is_on_demand() {
                    self.forget_lists();
                }
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
        self.instructions = None;
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
            start: self.start,
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
