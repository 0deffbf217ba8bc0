//! [`Manager`]: every configured server, connected at once, with its tools registered.
//!
//! - [`Manager::new`] connects every server concurrently: startup takes about as long as the
//!   slowest server, not the sum. A server that fails to start or to list its tools is logged
//!   as a warning, marked failed with its error, and skipped; it never blocks the others. So
//!   is an invalid entry of the config file.
//!   Every connected server's tools are then in the registry as `mcp__<server>__<tool>`
//!   ([`Manager::register_all`] does it again, returning the name collisions).
//! - [`Manager::watch`] follows each server's `notifications/tools/list_changed` and
//!   re-registers that one server's tools, debounced; servers that do not declare
//!   `tools.listChanged` are polled slowly instead. The subscription to a server's
//!   notifications is made before its tools are first listed, so no change is missed.
//! - [`Manager::call`] passes the gate, calls the tool and returns the rendered, capped
//!   output. If the session died it reconnects once and retries once; a call whose tool
//!   returned `isError` is never retried.
//! - [`Manager::add`] and [`Manager::remove`] change the servers at run time: an added server
//!   is connected, registered and watched like the others (a slow one blocks nobody); a
//!   removed one is unregistered and its client closed (its process gone) before `remove`
//!   returns. Neither touches the config file: the caller saves it.
//! - [`Manager::reconnect`], [`Manager::reconnect_server`], [`Manager::status`],
//!   [`Manager::instructions`], [`Manager::close`].

use super::config::{Config, ConfigError, ServerConfig, is_valid_server_name};
use super::events::{Event, EventBus};
use super::filter::ToolFilter;
use super::gate::{ConfirmCallback, Denied, Gate, PermissionMode, default_allowlist_path};
use super::instructions::instructions_block;
use super::registry::{Collision, RegisteredTool, Registry, ToolDefinition};
use super::requests::{ElicitationHandler, SamplingHandler};
use super::search::{
    Conversation, DEFAULT_SEARCH_LIMIT, SEARCH_TOOL, ToolIndex, ToolSearch, search_tool_definition,
};
use crate::client::{Client, ClientOptions};
use crate::error::{Error, ErrorKind, Result};
use crate::methods;
use crate::protocol::session::RequestOptions;
use crate::protocol::types::{Era, Tool, ToolOutput};
use crate::wire::jsonrpc::Notification;
use serde::Serialize;
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock, Weak};
use std::time::Duration;
use tokio::sync::broadcast;
use tokio::task::JoinHandle;

mod catalog;
mod connect;
mod filters;
mod reconnect;
mod search;
mod watch;

pub use catalog::{Catalog, LIST_RESOURCES_TOOL, MAX_SUBSCRIPTIONS, READ_RESOURCE_TOOL};
pub use filters::ServerTool;

pub use connect::connect_server;
#[cfg(feature = "oauth")]
pub use connect::connect_server_with_store;
use connect::{Connected, connect_and_list};
use watch::{apply_refresh, watch_server};

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
    /// Where OAuth tokens are kept; `None`: [`super::oauth::token_store`] (the keychain, or
    /// a 0600 file).
    #[cfg(feature = "oauth")]
    pub token_store: Option<Arc<dyn crate::auth::TokenStore>>,
    /// Where the servers found of the initialize era are remembered, so their next start
    /// skips the `server/discover` probe (see [`super::EraMemory`]); `None`: every start probes.
    pub eras: Option<Arc<super::eras::EraMemory>>,
    /// When tool search replaces the definitions ([`Manager::offered_tools`]); `None`: the
    /// config's top-level `"tool_search"`, else off.
    pub tool_search: Option<ToolSearch>,
    /// Where the manager tells what happens ([`Manager::events`]): state changes, list
    /// changes, updated resources, servers' log messages.
    pub events: EventBus,
    /// Answers the servers' elicitation requests, told which server asks (a
    /// [`PendingRequests`](super::PendingRequests) board's, or the embedder's own); `None`:
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

/// Where a server is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum ServerState {
    /// Starting, or reconnecting.
    #[serde(rename = "connecting")]
    Connecting,
    /// Connected, its tools listed.
    #[serde(rename = "connected")]
    Connected,
    /// Could not start, list its tools, or be configured: see the last error.
    #[serde(rename = "failed")]
    Failed,
    /// Needs an OAuth login first.
    #[serde(rename = "needs login")]
    NeedsLogin,
    /// Was connected; the connection ended (or the manager was closed).
    #[serde(rename = "disconnected")]
    Disconnected,
    /// Its entry says `"enabled": false`: kept in the file, not started, no tools registered.
    #[serde(rename = "disabled")]
    Disabled,
}

impl ServerState {
    /// The name shown to users: `connecting`, `connected`, `failed`, `needs login`,
    /// `disconnected`, `disabled`.
    pub fn name(self) -> &'static str {
        match self {
            ServerState::Connecting => "connecting",
            ServerState::Connected => "connected",
            ServerState::Failed => "failed",
            ServerState::NeedsLogin => "needs login",
            ServerState::Disconnected => "disconnected",
            ServerState::Disabled => "disabled",
        }
    }
}

impl fmt::Display for ServerState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One server's status.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ServerStatus {
    /// The server's name.
    pub name: String,
    /// `stdio` or `http` (what the config says; `?` for an invalid entry).
    pub transport: String,
    /// The protocol era of the session, once connected.
    pub era: Option<Era>,
    /// The negotiated protocol revision, once connected.
    pub protocol_version: Option<String>,
    /// Where it is.
    pub state: ServerState,
    /// The last error, if any (never holds expanded secrets).
    pub last_error: Option<String>,
    /// How many tools it has (hidden ones included).
    pub tool_count: usize,
    /// How many of its tools its filter hides (`"enabled_tools"`, `"disabled_tools"`): not
    /// registered, not callable.
    pub hidden_tools: usize,
    /// How many resources it lists.
    pub resource_count: usize,
    /// How many resource templates it lists.
    pub template_count: usize,
    /// How many prompts it lists.
    pub prompt_count: usize,
    /// Whether it declared instructions.
    pub has_instructions: bool,
    /// How long each request may wait for its answer (its entry's `timeout`, else the
    /// default); in JSON, seconds.
    #[serde(serialize_with = "as_seconds")]
    pub timeout: Duration,
    /// How long connecting may take (its entry's `startup_timeout`, else `timeout`); in JSON,
    /// seconds.
    #[serde(serialize_with = "as_seconds")]
    pub startup_timeout: Duration,
}

fn as_seconds<S: serde::Serializer>(
    value: &Duration,
    to: S,
) -> std::result::Result<S::Ok, S::Error> {
    to.serialize_f64(value.as_secs_f64())
}

/// Why a tool call ([`Manager::call`], [`Control::call`](super::Control::call)) did not
/// return an output.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum CallError {
    /// No registered tool has this name.
    UnknownTool(String),
    /// The gate refused the call.
    Denied(Denied),
    /// The server failed the call (after one reconnect and retry if the session died).
    Server(Error),
    /// The server has `most` calls in flight already ([`Control::call`](super::Control::call)
    /// runs no more at once): it may be hung; try again later.
    Busy {
        /// The server.
        server: String,
        /// Its calls in flight, the most at once.
        most: usize,
    },
    /// Another call is running under this caller's id.
    IdInUse(String),
    /// The call under this caller's id was cancelled
    /// ([`Control::cancel_call`](super::Control::cancel_call)); the server was told.
    Cancelled(String),
}

impl fmt::Display for CallError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CallError::UnknownTool(name) => write!(
                f,
                "no MCP tool named {name} is registered; list the tools and each server's state with `agenvoy-mcp tools`"
            ),
            CallError::Denied(d) => d.fmt(f),
            CallError::Server(e) => e.fmt(f),
            CallError::Busy { server, most } => write!(
                f,
                "server {server:?} has {most} calls in flight, the most run at once for one server (it may be hung: see its status); try again later"
            ),
            CallError::IdInUse(id) => write!(
                f,
                "a call with id {id:?} is running; give each call its own id"
            ),
            CallError::Cancelled(id) => {
                write!(f, "the call {id:?} was cancelled; the server was told")
            }
        }
    }
}

impl std::error::Error for CallError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        // The server's error is shown as this one (it is transparent): its cause is ours.
        match self {
            CallError::Server(e) => e.source(),
            _ => None,
        }
    }
}

/// Why [`Manager::add`] did not add a server.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum AddError {
    /// The name is not letters, digits, `_` or `-`.
    InvalidName(String),
    /// A server by this name is already there.
    Taken(String),
    /// A server of this name is still being removed or reconnected.
    Busy(String),
    /// The server was removed while it connected.
    Removed(String),
}

impl fmt::Display for AddError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AddError::InvalidName(name) => f.write_str(
                &super::config::server_name_problem(name)
                    .unwrap_or_else(|| format!("server name {name:?} is not valid")),
            ),
            AddError::Taken(name) => write!(
                f,
                "a server named {name:?} is already configured; remove it first or pick another name"
            ),
            AddError::Busy(name) => write!(
                f,
                "server {name:?} is still being removed or reconnected; try again in a moment"
            ),
            AddError::Removed(name) => {
                write!(f, "server {name:?} was removed while it was connecting")
            }
        }
    }
}

impl std::error::Error for AddError {}

struct Slot {
    config: Result<ServerConfig, ConfigError>,
    /// Which of its tools are registered.
    filter: ToolFilter,
    /// `"enabled": false` makes it [`ServerState::Disabled`] and keeps it so.
    enabled: bool,
    state: ServerState,
    client: Option<Arc<Client>>,
    last_error: Option<String>,
    tools: Vec<Tool>,
    /// Its resources, templates and prompts.
    catalog: Catalog,
    /// The resources it is followed for ([`Manager::subscribe`]).
    subscriptions: std::collections::BTreeSet<String>,
    /// The same, for a stateless server's `subscriptions/listen` (opened anew on a change).
    listening: tokio::sync::watch::Sender<Vec<String>>,
    /// The subscription made before the tools were listed, until a watcher takes it.
    notifications: Option<broadcast::Receiver<Notification>>,
    watcher: Option<JoinHandle<()>>,
}

impl Slot {
    fn new(config: Result<ServerConfig, ConfigError>) -> Slot {
        let (state, last_error) = match &config {
            Ok(_) => (ServerState::Connecting, None),
            Err(e) => (ServerState::Failed, Some(e.to_string())),
        };
        Slot {
            config,
            filter: ToolFilter::all(),
            enabled: true,
            state,
            client: None,
            last_error,
            tools: Vec::new(),
            catalog: Catalog::default(),
            subscriptions: Default::default(),
            listening: tokio::sync::watch::Sender::new(Vec::new()),
            notifications: None,
            watcher: None,
        }
    }
}

struct Inner {
    options: ManagerOptions,
    gate: Gate,
    config: Config,
    slots: Mutex<BTreeMap<String, Slot>>,
    registry: RwLock<Registry>,
    registered: AtomicBool,
    watching: AtomicBool,
    /// One lock per server, so that concurrent reconnects of one server make one connection.
    reconnect_locks: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
    /// When tool search is on (the options', else the config's).
    tool_search: Option<ToolSearch>,
    /// Bumped at every change of the registry; the index below is of one generation.
    generation: std::sync::atomic::AtomicU64,
    index: Mutex<Option<(u64, Arc<ToolIndex>)>>,
    /// Turns true when [`Manager::close`] starts: connects in flight stop and close their
    /// transport, and no new one starts.
    closing: tokio::sync::watch::Sender<bool>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        if let Ok(slots) = self.slots.get_mut() {
            for slot in slots.values_mut() {
                if let Some(w) = slot.watcher.take() {
                    w.abort();
                }
            }
        }
    }
}

/// Every configured server, its tools, the gate: Agenvoy's MCP runtime. Cloning shares it.
#[derive(Clone)]
pub struct Manager {
    inner: Arc<Inner>,
}

impl fmt::Debug for Manager {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Manager")
            .field("servers", &self.status())
            .finish()
    }
}

/// A server [`Manager::begin_add`] has taken the name for, not connected yet.
pub(crate) struct PendingAdd {
    manager: Manager,
    name: String,
    config: ServerConfig,
    _held: tokio::sync::OwnedMutexGuard<()>,
}

impl PendingAdd {
    /// Connects the server and lists its tools; returns its status.
    pub(crate) async fn connect(self) -> Result<ServerStatus, AddError> {
        let manager = &self.manager;
        let closing = manager.inner.closing.subscribe();
        let result = connect_and_list(
            self.name.clone(),
            self.config,
            &manager.inner.options,
            closing,
        )
        .await;
        let _ = manager.settle(&self.name, result).await;
        manager
            .status()
            .into_iter()
            .find(|s| s.name == self.name)
            .ok_or(AddError::Removed(self.name))
    }
}

impl Manager {
    /// Reads the config file at `path` (a missing file is no servers) and connects every
    /// server, as [`Manager::new`].
    pub async fn load(
        path: &std::path::Path,
        options: ManagerOptions,
    ) -> Result<Manager, ConfigError> {
        let config = Config::load(path)?;
        Ok(Manager::new(config, options).await)
    }

    /// Connects every server of `config` at once, waits until each is connected or failed,
    /// and registers the tools of those connected (as [`Manager::register_all`]: name
    /// collisions are logged). Failures are logged and recorded in [`Manager::status`]; they
    /// never fail the whole.
    pub async fn new(config: Config, options: ManagerOptions) -> Manager {
        let (manager, connects) = Manager::prepare(config, options);
        let mut connecting = tokio::task::JoinSet::new();
        for pending in connects {
            connecting.spawn(pending.connect());
        }
        while connecting.join_next().await.is_some() {}
        manager.register_all();
        manager
    }

    /// [`Manager::new`] that returns at once: every server shows `connecting` until its
    /// connect ends, in the background (what a panel wants: it draws while servers start).
    /// Each server's tools are registered as it connects, so a name collision goes to the
    /// first one connected; [`Manager::register_all`] registers them again in name order.
    /// Must be called within a tokio runtime.
    pub fn start(config: Config, options: ManagerOptions) -> Manager {
        let (manager, connects) = Manager::prepare(config, options);
        manager.inner.registered.store(true, Ordering::SeqCst);
        for pending in connects {
            tokio::spawn(pending.connect());
        }
        manager
    }

    /// A manager with a slot for every server of `config` (an invalid entry failed), and
    /// the connects to run, each holding its server's lock so that a reconnect or a remove
    /// waits for it.
    fn prepare(config: Config, options: ManagerOptions) -> (Manager, Vec<PendingAdd>) {
        let gate = Gate::new(options.allowlist_path.clone(), options.confirm.clone());
        let mut slots = BTreeMap::new();
        let mut to_connect = Vec::new();
        for (name, entry) in config.servers() {
            let enabled = config
                .is_enabled(&name)
                .and_then(Result::ok)
                .unwrap_or(true);
            match &entry {
                Ok(_) if !enabled => tracing::info!(server = %name, "disabled in the config"),
                Ok(server) => to_connect.push((name.clone(), server.clone())),
                Err(e) => tracing::warn!(server = %name, "skipping the server: {e}"),
            }
            let mut slot = Slot::new(entry);
            if let Some(Ok(filter)) = config.tool_filter(&name) {
                slot.filter = filter;
            }
            if !enabled && slot.config.is_ok() {
                slot.enabled = false;
                slot.state = ServerState::Disabled;
            }
            slots.insert(name, slot);
        }
        let tool_search = options.tool_search.or_else(|| {
            config.tool_search().unwrap_or_else(|e| {
                tracing::warn!("tool search stays off: {e}");
                None
            })
        });
        let manager = Manager {
            inner: Arc::new(Inner {
                tool_search,
                generation: Default::default(),
                index: Mutex::new(None),
                options,
                gate,
                config,
                slots: Mutex::new(slots),
                registry: RwLock::new(Registry::new()),
                registered: AtomicBool::new(false),
                watching: AtomicBool::new(false),
                reconnect_locks: Mutex::new(HashMap::new()),
                closing: tokio::sync::watch::Sender::new(false),
            }),
        };
        let connects = to_connect
            .into_iter()
            .map(|(name, config)| PendingAdd {
                _held: manager
                    .reconnect_lock(&name)
                    .try_lock_owned()
                    .expect("a new manager's locks are free"),
                manager: manager.clone(),
                name,
                config,
            })
            .collect();
        (manager, connects)
    }

    /// The config the manager was made from (servers added or removed since are not in it:
    /// [`Manager::status`] lists the servers it has now).
    pub fn config(&self) -> &Config {
        &self.inner.config
    }

    /// The gate every call passes.
    pub fn gate(&self) -> &Gate {
        &self.inner.gate
    }

    /// Where the manager keeps OAuth tokens: [`ManagerOptions::token_store`], else the
    /// process's [`super::oauth::token_store`].
    #[cfg(feature = "oauth")]
    pub fn token_store(&self) -> Arc<dyn crate::auth::TokenStore> {
        self.inner
            .options
            .token_store
            .clone()
            .unwrap_or_else(super::oauth::token_store)
    }

    fn slots(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Slot>> {
        self.inner.slots.lock().expect("slots lock")
    }

    /// Records the outcome of connecting `name`, registers its tools (unless the manager is
    /// still in [`Manager::new`], which registers all at the end) and starts its watcher
    /// (once [`Manager::watch`] has run).
    fn apply_connect(&self, name: &str, result: Result<Connected>) {
        let mut slots = self.slots();
        let Some(slot) = slots.get_mut(name) else {
            return;
        };
        if let Some(w) = slot.watcher.take() {
            w.abort();
        }
        if *self.inner.closing.borrow() || !slot.enabled {
            // Closed (or disabled) while it connected: it ends as every server does, quietly.
            slot.state = if slot.enabled {
                ServerState::Disconnected
            } else {
                ServerState::Disabled
            };
            slot.client = None;
            slot.notifications = None;
            return;
        }
        match result {
            Ok(connected) => {
                slot.state = ServerState::Connected;
                slot.last_error = None;
                slot.tools = connected.tools;
                slot.catalog = connected.catalog;
                slot.client = Some(connected.client);
                slot.notifications = Some(connected.notifications);
                tracing::info!(server = %name, tools = slot.tools.len(), "connected");
            }
            Err(e) => {
                tracing::warn!(server = %name, "failed, skipping it: {e}");
                slot.state = if e.needs_login() {
                    ServerState::NeedsLogin
                } else {
                    ServerState::Failed
                };
                slot.last_error = Some(e.to_string());
                slot.tools.clear();
                slot.catalog = Catalog::default();
                slot.client = None;
                slot.notifications = None;
            }
        }
        self.inner.options.events.publish(Event::State {
            server: name.to_string(),
            state: Some(slot.state),
            error: slot.last_error.clone(),
        });
        if self.inner.registered.load(Ordering::SeqCst) {
            self.register_slot(name, slot);
        }
        if self.inner.watching.load(Ordering::SeqCst) {
            self.start_watcher(name, slot);
        }
    }

    fn register_slot(&self, name: &str, slot: &Slot) -> Vec<Collision> {
        let mut registry = self.registry_mut();
        if slot.state != ServerState::Connected {
            registry.remove_server(name);
            return Vec::new();
        }
        let collisions = if slot.filter.shows_all() {
            registry.register_server(name, &slot.tools)
        } else {
            let visible: Vec<Tool> = slot
                .tools
                .iter()
                .filter(|t| slot.filter.allows(&t.name))
                .cloned()
                .collect();
            registry.register_server(name, &visible)
        };
        for c in &collisions {
            tracing::warn!(server = %name, "{c}");
        }
        collisions
    }

    /// Registers every connected server's tools again as `mcp__<server>__<tool>`, servers in
    /// name order, and returns the name collisions found (each also logged). [`Manager::new`]
    /// and [`Manager::start`] register already; refreshes and reconnects re-register their
    /// server.
    pub fn register_all(&self) -> Vec<Collision> {
        self.inner.registered.store(true, Ordering::SeqCst);
        let slots = self.slots();
        *self.registry_mut() = Registry::new();
        slots
            .iter()
            .flat_map(|(name, slot)| self.register_slot(name, slot))
            .collect()
    }

    /// Starts following every connected server's tool list: on
    /// `notifications/tools/list_changed` (debounced) or, for servers that do not declare
    /// `tools.listChanged`, every poll interval, the server's tools are listed again and
    /// re-registered. Idempotent.
    pub fn watch(&self) {
        self.inner.watching.store(true, Ordering::SeqCst);
        let mut slots = self.slots();
        for (name, slot) in slots.iter_mut() {
            if slot.watcher.is_none() {
                self.start_watcher(name, slot);
            }
        }
    }

    fn start_watcher(&self, name: &str, slot: &mut Slot) {
        let (Some(client), Some(notifications)) = (slot.client.clone(), slot.notifications.take())
        else {
            return;
        };
        let notifies = client
            .details()
            .capabilities
            .pointer("/tools/listChanged")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let follow = watch::Following {
            debounce: self.inner.options.debounce,
            poll: (!notifies).then_some(self.inner.options.poll_interval),
            events: self.inner.options.events.clone(),
            subscriptions: slot.listening.subscribe(),
        };
        let task = watch_server(
            Arc::downgrade(&self.inner),
            name.to_string(),
            client,
            notifications,
            follow,
        );
        slot.watcher = Some(tokio::spawn(task));
    }

    /// Lists one server's tools again and re-registers them (what the watcher does on a
    /// change). Errors leave the previous tools in place.
    pub async fn refresh_server(&self, name: &str) -> Result<usize> {
        let client = self
            .client(name)
            .ok_or_else(|| not_connected(name).during(methods::TOOLS_LIST))?;
        let result = client.list_tools().await;
        apply_refresh(&self.inner, name, &client, result)
    }

    /// Closes every client, stops every watcher and empties the registry. Servers end as
    /// `disconnected`. A server still starting is stopped too (its process ended), and no
    /// server starts again: the manager is done.
    pub async fn close(&self) {
        self.inner.closing.send_replace(true);
        let clients: Vec<Arc<Client>> = {
            let mut slots = self.slots();
            slots
                .values_mut()
                .filter_map(|slot| {
                    if let Some(w) = slot.watcher.take() {
                        w.abort();
                    }
                    slot.notifications = None;
                    let client = slot.client.take()?;
                    slot.state = ServerState::Disconnected;
                    Some(client)
                })
                .collect()
        };
        *self.registry_mut() = Registry::new();
        let mut closing = tokio::task::JoinSet::new();
        for client in clients {
            closing.spawn(async move { client.close().await });
        }
        // Connects in flight hold their server's lock until their transport is closed.
        let locks: Vec<_> = self
            .inner
            .reconnect_locks
            .lock()
            .expect("locks lock")
            .values()
            .cloned()
            .collect();
        for lock in locks {
            closing.spawn(async move {
                let _ = lock.lock().await;
            });
        }
        while closing.join_next().await.is_some() {}
    }

    /// The client of a server, if it is connected.
    pub fn client(&self, name: &str) -> Option<Arc<Client>> {
        self.slots().get(name).and_then(|s| s.client.clone())
    }

    /// Every server's status, sorted by name.
    pub fn status(&self) -> Vec<ServerStatus> {
        self.slots()
            .iter()
            .map(|(name, slot)| {
                let mut state = slot.state;
                let mut last_error = slot.last_error.clone();
                let closed = slot
                    .client
                    .as_ref()
                    .and_then(|c| c.session().closed_reason());
                if let Some(reason) = closed {
                    state = ServerState::Disconnected;
                    last_error = Some(Error::new(name, ErrorKind::Closed(reason)).to_string());
                }
                let details = slot.client.as_ref().map(|c| c.details());
                let timeouts = slot.config.as_ref().ok().map(ServerConfig::timeouts);
                let defaults = &self.inner.options.client;
                let timeout = timeouts.and_then(|t| t.request).unwrap_or(defaults.timeout);
                ServerStatus {
                    name: name.clone(),
                    transport: slot
                        .config
                        .as_ref()
                        .map_or("?", ServerConfig::transport)
                        .to_string(),
                    era: details.map(|d| d.era),
                    protocol_version: details.map(|d| d.protocol_version.clone()),
                    state,
                    last_error,
                    tool_count: slot.tools.len(),
                    hidden_tools: slot
                        .tools
                        .iter()
                        .filter(|t| !slot.filter.allows(&t.name))
                        .count(),
                    resource_count: slot.catalog.resources.len(),
                    template_count: slot.catalog.templates.len(),
                    prompt_count: slot.catalog.prompts.len(),
                    has_instructions: details
                        .and_then(|d| d.instructions.as_deref())
                        .is_some_and(|i| !i.trim().is_empty()),
                    timeout,
                    startup_timeout: timeouts
                        .and_then(|t| t.startup)
                        .or(defaults.startup_timeout)
                        .unwrap_or(timeout),
                }
            })
            .collect()
    }

    /// The registry, to change: the search index is of the generation before.
    fn registry_mut(&self) -> std::sync::RwLockWriteGuard<'_, Registry> {
        let guard = self.inner.registry.write().expect("registry lock");
        self.inner.generation.fetch_add(1, Ordering::SeqCst);
        guard
    }

    /// A snapshot of the registry.
    pub fn registry(&self) -> Registry {
        self.inner.registry.read().expect("registry lock").clone()
    }

    /// The server and tool behind registered name `name`, without copying the registry
    /// (each API call asks: a copy was most of a call's cost, more with more servers).
    #[cfg(feature = "api")]
    pub(crate) fn resolve(&self, name: &str) -> Option<(String, String)> {
        let registry = self.inner.registry.read().expect("registry lock");
        let (server, tool) = registry.resolve(name)?;
        Some((server.to_string(), tool.to_string()))
    }

    /// Every registered tool's definition, sorted by name: what to give the LLM API. Every
    /// connected server's tools are in it from [`Manager::new`] on (with
    /// [`Manager::start`], each server's once it has connected).
    /// With them, when any connected server has resources, the two host tools that list and
    /// read them ([`LIST_RESOURCES_TOOL`], [`READ_RESOURCE_TOOL`]).
    pub fn tool_definitions(&self) -> Vec<ToolDefinition> {
        let mut definitions = self
            .inner
            .registry
            .read()
            .expect("registry lock")
            .definitions();
        let host_tools = self.resource_tool_definitions();
        if !host_tools.is_empty() {
            definitions.extend(host_tools);
            definitions.sort_by(|a, b| a.name.cmp(&b.name));
        }
        definitions
    }

    /// The definition the model was given for the tool `name`: a registered tool's, a host
    /// tool's ([`LIST_RESOURCES_TOOL`], [`READ_RESOURCE_TOOL`]) or the search tool's
    /// ([`SEARCH_TOOL`](crate::host::SEARCH_TOOL)); `None` for any other name.
    pub fn tool_definition(&self, name: &str) -> Option<ToolDefinition> {
        if let Some(tool) = self.inner.registry.read().expect("registry lock").get(name) {
            return Some(tool.definition.clone());
        }
        if name == crate::host::SEARCH_TOOL {
            return Some(crate::host::search_tool_definition());
        }
        self.resource_tool_definitions()
            .into_iter()
            .find(|d| d.name == name)
    }

    /// A new listener of what happens among the servers (see [`Event`]): state changes, list
    /// changes and updated resources (followed once [`Manager::watch`] runs), servers' log
    /// messages, and what else publishes on [`ManagerOptions::events`].
    pub fn events(&self) -> broadcast::Receiver<Event> {
        self.inner.options.events.subscribe()
    }

    /// The bus [`Manager::events`] listens on.
    pub fn event_bus(&self) -> &EventBus {
        &self.inner.options.events
    }

    /// The block for the system prompt with every connected server's instructions (empty if
    /// none has any), each server's text escaped and bounded.
    pub fn instructions(&self) -> String {
        let slots = self.slots();
        let texts: Vec<(&str, &str)> = slots
            .iter()
            .filter_map(|(name, slot)| {
                let text = slot.client.as_ref()?.details().instructions.as_deref()?;
                Some((name.as_str(), text))
            })
            .collect();
        instructions_block(texts)
    }

    /// Calls a registered tool through the gate and returns what the model sees.
    pub async fn call(
        &self,
        name: &str,
        arguments: Value,
        mode: PermissionMode,
    ) -> Result<ToolOutput, CallError> {
        self.call_with(name, arguments, mode, RequestOptions::default())
            .await
    }

    /// [`Manager::call`] with request options (timeout, progress).
    pub async fn call_with(
        &self,
        name: &str,
        arguments: Value,
        mode: PermissionMode,
        options: RequestOptions,
    ) -> Result<ToolOutput, CallError> {
        if let Some(outcome) = self.call_resource_tool(name, &arguments, mode).await {
            return outcome;
        }
        let (server, tool) = {
            let registry = self.inner.registry.read().expect("registry lock");
            let (s, t) = registry
                .resolve(name)
                .ok_or_else(|| CallError::UnknownTool(name.to_string()))?;
            (s.to_string(), t.to_string())
        };
        self.inner
            .gate
            .check(name, Some(&server), &arguments, mode)
            .await
            .map_err(CallError::Denied)?;
        let arguments = match arguments {
            Value::Null => Value::Object(Default::default()),
            other => other,
        };
        let mut reconnected = false;
        let mut client = match self.client(&server) {
            Some(c) if !c.is_closed() => c,
            stale => {
                reconnected = true;
                self.reconnect_after(&server, stale.as_ref())
                    .await
                    .map_err(CallError::Server)?
            }
        };
        loop {
            match client
                .call_tool_with(&tool, arguments.clone(), options.clone())
                .await
            {
                Ok(output) => return Ok(output),
                // Only a call that never reached the server is sent again.
                Err(e) if e.is_closed() && !e.may_have_run() && !reconnected => {
                    tracing::warn!(server = %server, "the session ended before {name} was sent: reconnecting once and sending it");
                    reconnected = true;
                    client = self
                        .reconnect_after(&server, Some(&client))
                        .await
                        .map_err(CallError::Server)?;
                }
                Err(e) => return Err(CallError::Server(e)),
            }
        }
    }

    /// Adds a server at run time: connects it and lists its tools (its failure is recorded
    /// in [`Manager::status`] as at startup, not returned), registers them once
    /// [`Manager::register_all`] has run and watches it once [`Manager::watch`] has run.
    /// Returns its status. The other servers are never held up; the config file is not
    /// touched.
    pub async fn add(&self, name: &str, config: ServerConfig) -> Result<ServerStatus, AddError> {
        self.begin_add(name, config)?.connect().await
    }

    /// The first, immediate half of [`Manager::add`]: the name is checked and taken (the
    /// server shows as `connecting`); [`PendingAdd::connect`] does the rest.
    pub(crate) fn begin_add(
        &self,
        name: &str,
        config: ServerConfig,
    ) -> Result<PendingAdd, AddError> {
        if !is_valid_server_name(name) {
            return Err(AddError::InvalidName(name.to_string()));
        }
        // Held until the connect ends, so a reconnect or a remove of this name waits for it,
        // and a connect of a removed server of the same name cannot land in this slot.
        let held = self
            .reconnect_lock(name)
            .try_lock_owned()
            .map_err(|_| AddError::Busy(name.to_string()))?;
        let mut slots = self.slots();
        if slots.contains_key(name) {
            return Err(AddError::Taken(name.to_string()));
        }
        slots.insert(name.to_string(), Slot::new(Ok(config.clone())));
        Ok(PendingAdd {
            manager: self.clone(),
            name: name.to_string(),
            config,
            _held: held,
        })
    }

    /// Removes a server at run time: unregisters its tools, stops its watcher and closes its
    /// client (a stdio server's process is gone when this returns; a connect in flight is
    /// waited for and closed too). Returns false if there is no such server. The config file
    /// is not touched.
    pub async fn remove(&self, name: &str) -> bool {
        match self.detach(name) {
            Some(client) => {
                self.close_detached(name, client).await;
                true
            }
            None => false,
        }
    }

    /// The first, immediate half of [`Manager::remove`]: the server leaves the slots and the
    /// registry. `None` if there is no such server; else its client, for
    /// [`Manager::close_detached`].
    pub(crate) fn detach(&self, name: &str) -> Option<Option<Arc<Client>>> {
        let mut slots = self.slots();
        let mut slot = slots.remove(name)?;
        if let Some(w) = slot.watcher.take() {
            w.abort();
        }
        // Servers whose tools lost a name to this one get it now.
        let blocked: std::collections::BTreeSet<String> = {
            let mut registry = self.registry_mut();
            registry.remove_server(name);
            registry
                .collisions()
                .into_iter()
                .filter(|c| c.kept.0 == name)
                .map(|c| c.dropped.0)
                .collect()
        };
        if self.inner.registered.load(Ordering::SeqCst) {
            for other in &blocked {
                if let Some(other_slot) = slots.get(other) {
                    self.register_slot(other, other_slot);
                }
            }
        }
        tracing::info!(server = %name, "removed");
        self.inner.options.events.publish(Event::State {
            server: name.to_string(),
            state: None,
            error: None,
        });
        Some(slot.client.take())
    }

    /// The second half of [`Manager::remove`]: closes the client and waits out a connect of
    /// this name in flight (which closes what it made, finding its slot gone).
    pub(crate) async fn close_detached(&self, name: &str, client: Option<Arc<Client>>) {
        if let Some(client) = client {
            client.close().await;
        }
        let lock = self.reconnect_lock(name);
        drop(lock.lock().await);
        drop(lock);
        let mut locks = self.inner.reconnect_locks.lock().expect("locks lock");
        let unused = locks.get(name).is_some_and(|l| Arc::strong_count(l) == 1);
        if unused && !self.slots().contains_key(name) {
            locks.remove(name);
        }
        drop(locks);
        give_back_freed_memory();
    }
}

/// Hands the memory a removed server's lists took back to the OS. glibc's allocator keeps
/// what many small blocks freed in its arenas (a server's tools are thousands of them), so the
/// process's resident memory would stay at its peak; `malloc_trim` releases the free pages.
fn give_back_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only returns free memory to the OS; it is safe at any time.
    unsafe {
        libc::malloc_trim(0);
    }
}

fn not_connected(name: &str) -> Error {
    Error::new(
        name,
        ErrorKind::Closed(
            "the server is not connected (see `agenvoy-mcp tools` for its last error)".into(),
        ),
    )
}
