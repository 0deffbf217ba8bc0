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
//!
//! This file is the face the embedder calls. Beneath it, each file keeps its own state:
//! `servers.rs` every server's slot, the registry and the connect locks, and what changes
//! them (a connect's outcome, a refresh, a reconnect, a removal); `slot.rs` one server;
//! `visibility.rs` its tools and filter; `catalog.rs` its resources, prompts and what is
//! followed; `watch.rs` its watcher; `registered.rs` the registry and its search index;
//! `locks.rs` the per-server connect locks; `connect.rs` from an entry to a client;
//! `on_demand.rs` what keeps an on-demand server running; `kept_catalog.rs` its lists kept
//! between launches.

mod catalog;
mod connect;
mod error;
mod kept_catalog;
mod locks;
mod on_demand;
mod options;
mod registered;
mod servers;
mod slot;
mod visibility;
mod watch;

pub use super::status::{ServerState, ServerStatus};
pub use catalog::{
    Catalog, LIST_RESOURCES_TOOL, LOAD_SKILL_TOOL, MAX_SKILLS_DESCRIBED, MAX_SUBSCRIPTIONS,
    READ_RESOURCE_TOOL,
};
pub use connect::connect_server;
#[cfg(feature = "oauth")]
pub use connect::connect_server_with_store;
pub use error::{AddError, CallError};
pub use kept_catalog::{CatalogStore, FileCatalogStore, KeptCatalog};
pub use options::ManagerOptions;
pub use visibility::ServerTool;

use super::config::{Config, ServerConfig, is_valid_server_name};
use super::config_error::ConfigError;
use super::events::{Event, EventBus};
use super::filter::ToolFilter;
use super::gate::{Gate, PermissionMode};
use super::instructions::instructions_block;
use super::registry::{Collision, RegisteredTool, Registry, ToolDefinition};
use super::start::Start;
use super::tool_search::{Conversation, SEARCH_TOOL, ToolIndex, search_tool_definition};
use crate::client::Client;
use crate::error::Result;
use crate::error::{Error, ErrorKind};
use crate::methods;
use crate::protocol::items::{Completion, CompletionRef, PromptContents, ResourceOutput};
use crate::protocol::session::RequestOptions;
use crate::protocol::skills::{Skill, SkillFileContent};
use crate::protocol::types::{Era, ToolOutput};
use catalog::{error_output, find_skill, listing, loaded_skill, no_such_server, text_argument};
use registered::{search_arguments, search_output};
use serde_json::Value;
use servers::Servers;
use slot::not_connected;
use std::fmt;
use std::sync::Arc;
use tokio::sync::broadcast;

/// Every configured server, its tools, the gate: Agenvoy's MCP runtime. Cloning shares it.
#[derive(Clone)]
pub struct Manager {
    servers: Arc<Servers>,
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
        let servers = &self.manager.servers;
        let _ = servers.connect(&self.name, self.config).await;
        // An on-demand server was started to fill its catalog: stopped unless in use.
        servers.stop_idle(Some(&self.name), true).await;
        servers.stop_idle_servers();
        servers
            .server_status(&self.name)
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
        manager.servers.stop_idle_servers();
        manager
    }

    /// [`Manager::new`] that returns at once: every server shows `connecting` until its
    /// connect ends, in the background (what a panel wants: it draws while servers start).
    /// Each server's tools are registered as it connects, so a name collision goes to the
    /// first one connected; [`Manager::register_all`] registers them again in name order.
    /// Must be called within a tokio runtime.
    pub fn start(config: Config, options: ManagerOptions) -> Manager {
        let (manager, connects) = Manager::prepare(config, options);
        // On from here on; an idle on-demand server's kept tools are registered now.
        manager.servers.register_all();
        for pending in connects {
            tokio::spawn(pending.connect());
        }
        manager.servers.stop_idle_servers();
        manager
    }

    /// A manager with a slot for every server of `config` (an invalid entry failed), and
    /// the connects to run, each holding its server's lock so that a reconnect or a remove
    /// waits for it.
    fn prepare(config: Config, options: ManagerOptions) -> (Manager, Vec<PendingAdd>) {
        let (servers, to_connect) = Servers::new(config, options);
        let manager = Manager {
            servers: Arc::new(servers),
        };
        let connects = to_connect
            .into_iter()
            .map(|(name, config)| PendingAdd {
                _held: manager
                    .servers
                    .locks
                    .of(&name)
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
        &self.servers.config
    }

    /// The gate every call passes.
    pub fn gate(&self) -> &Gate {
        &self.servers.gate
    }

    /// Where the manager keeps OAuth tokens: [`ManagerOptions::token_store`], else the
    /// process's [`super::oauth::token_store`].
    #[cfg(feature = "oauth")]
    pub fn token_store(&self) -> Arc<dyn crate::auth::TokenStore> {
        self.servers
            .options
            .token_store
            .clone()
            .unwrap_or_else(super::oauth::token_store)
    }

    /// Registers every connected server's tools again as `mcp__<server>__<tool>`, servers in
    /// name order, and returns the name collisions found (each also logged). [`Manager::new`]
    /// and [`Manager::start`] register already; refreshes and reconnects re-register their
    /// server.
    pub fn register_all(&self) -> Vec<Collision> {
        self.servers.register_all()
    }

    /// Starts following every connected server's tool list: on
    /// `notifications/tools/list_changed` (debounced) or, for servers that do not declare
    /// `tools.listChanged`, every poll interval, the server's tools are listed again and
    /// re-registered. Idempotent.
    pub fn watch(&self) {
        self.servers.watch()
    }

    /// Lists one server's tools again and re-registers them (what the watcher does on a
    /// change). Errors leave the previous tools in place.
    pub async fn refresh_server(&self, name: &str) -> Result<usize> {
        let client = self
            .client(name)
            .ok_or_else(|| not_connected(name).during(methods::TOOLS_LIST))?;
        let result = client.list_tools().await;
        let count = self.servers.apply_refresh(name, &client, result)?;
        self.servers.keep_catalog(name, &client);
        Ok(count)
    }

    /// Closes every client, stops every watcher and empties the registry. Servers end as
    /// `disconnected`. A server still starting is stopped too (its process ended), and no
    /// server starts again: the manager is done.
    pub async fn close(&self) {
        self.servers.close().await
    }

    /// The client of a server, if it is connected.
    pub fn client(&self, name: &str) -> Option<Arc<Client>> {
        self.servers.client(name)
    }

    /// Every server's status, sorted by name.
    pub fn status(&self) -> Vec<ServerStatus> {
        self.servers.status()
    }

    /// A snapshot of the registry.
    pub fn registry(&self) -> Registry {
        self.servers.registered.read().clone()
    }

    /// The server and tool behind registered name `name`, without copying the registry
    /// (each call through `Control` asks: a copy was most of a call's cost, more with more
    /// servers).
    pub(crate) fn resolve(&self, name: &str) -> Option<(String, String)> {
        let registry = self.servers.registered.read();
        let (server, tool) = registry.resolve(name)?;
        Some((server.to_string(), tool.to_string()))
    }

    /// Every registered tool's definition, sorted by name: what to give the LLM API. Every
    /// connected server's tools are in it from [`Manager::new`] on (with
    /// [`Manager::start`], each server's once it has connected).
    /// With them, when any connected server has resources, the two host tools that list and
    /// read them ([`LIST_RESOURCES_TOOL`], [`READ_RESOURCE_TOOL`]); when any has skills, the
    /// one that loads a skill ([`LOAD_SKILL_TOOL`]).
    pub fn tool_definitions(&self) -> Vec<ToolDefinition> {
        let mut definitions = self.servers.registered.read().definitions();
        let host_tools = self.servers.host_tool_definitions();
        if !host_tools.is_empty() {
            definitions.extend(host_tools);
            definitions.sort_by(|a, b| a.name.cmp(&b.name));
        }
        definitions
    }

    /// The definition the model was given for the tool `name`: a registered tool's, a host
    /// tool's ([`LIST_RESOURCES_TOOL`], [`READ_RESOURCE_TOOL`], [`LOAD_SKILL_TOOL`]) or the search tool's
    /// ([`SEARCH_TOOL`](crate::host::SEARCH_TOOL)); `None` for any other name.
    pub fn tool_definition(&self, name: &str) -> Option<ToolDefinition> {
        if let Some(tool) = self.servers.registered.read().get(name) {
            return Some(tool.definition.clone());
        }
        if name == SEARCH_TOOL {
            return Some(search_tool_definition());
        }
        self.servers
            .host_tool_definitions()
            .into_iter()
            .find(|d| d.name == name)
    }

    /// A new listener of what happens among the servers (see [`Event`]): state changes, list
    /// changes and updated resources (followed once [`Manager::watch`] runs), servers' log
    /// messages, and what else publishes on [`ManagerOptions::events`].
    pub fn events(&self) -> broadcast::Receiver<Event> {
        self.servers.options.events.subscribe()
    }

    /// The bus [`Manager::events`] listens on.
    pub fn event_bus(&self) -> &EventBus {
        &self.servers.options.events
    }

    /// The block for the system prompt with every connected server's instructions (empty if
    /// none has any), each server's text escaped and bounded.
    pub fn instructions(&self) -> String {
        let slots = self.servers.slots();
        let texts = slots
            .iter()
            .filter_map(|(name, slot)| Some((name.as_str(), slot.instructions()?)));
        instructions_block(texts)
    }

    /// Server `name`'s instructions, while its tools are registered (connected, or an
    /// on-demand server's kept ones); `None` if it has none or there is no such server.
    pub fn server_instructions(&self, name: &str) -> Option<String> {
        let slots = self.servers.slots();
        slots.get(name)?.instructions().map(str::to_string)
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

    /// [`Manager::call`] with request options (timeout, progress, trace context).
    pub async fn call_with(
        &self,
        name: &str,
        arguments: Value,
        mode: PermissionMode,
        options: RequestOptions,
    ) -> Result<ToolOutput, CallError> {
        if let Some(outcome) = self.call_host_tool(name, &arguments, mode, &options).await {
            return outcome;
        }
        let resolved = self
            .servers
            .registered
            .read()
            .resolve(name)
            .map(|(s, t)| (s.to_string(), t.to_string()));
        let Some((server, tool)) = resolved else {
            return Err(self.unregistered(name));
        };
        self.servers
            .gate
            .check(name, Some(&server), &arguments, mode)
            .await
            .map_err(CallError::Denied)?;
        let arguments = match arguments {
            Value::Null => Value::Object(Default::default()),
            other => other,
        };
        // Held until the call ends: an on-demand server is not stopped under it.
        let _in_use = self.servers.in_use(&server);
        let mut reconnected = false;
        let mut client = match self.client(&server) {
            Some(c) if !c.is_closed() => c,
            stale => {
                reconnected = true;
                self.servers
                    .reconnect_after(&server, stale.as_ref())
                    .await
                    .map_err(CallError::Server)?
            }
        };
        loop {
            match client
                .call_tool_with(&tool, arguments.clone(), options.clone())
                .await
            {
                Ok(output) => {
                    self.servers.login_seen(&server, &client, None);
                    return Ok(output);
                }
                // Only a call that never reached the server is sent again.
                Err(e) if e.is_closed() && !e.may_have_run() && !reconnected => {
                    tracing::warn!(server = %server, "the session ended before {name} was sent: reconnecting once and sending it");
                    reconnected = true;
                    client = self
                        .servers
                        .reconnect_after(&server, Some(&client))
                        .await
                        .map_err(CallError::Server)?;
                }
                Err(e) => {
                    if e.needs_login() {
                        // A refused refresh dropped the tokens: the status says so.
                        self.servers.login_seen(&server, &client, Some(&e));
                    }
                    return Err(CallError::Server(e));
                }
            }
        }
    }

    /// Why no tool is registered as `name`: its server is not connected
    /// ([`CallError::Unavailable`], with the server's state and last error), or no server has
    /// it ([`CallError::UnknownTool`]).
    fn unregistered(&self, name: &str) -> CallError {
        let of_server = |server: &str| {
            name.strip_prefix("mcp__")
                .and_then(|rest| rest.strip_prefix(server))
                .and_then(|rest| rest.strip_prefix("__"))
                .is_some_and(|tool| !tool.is_empty())
        };
        // The longest name wins: `a__b` over `a` for `mcp__a__b__t`.
        let down = self
            .status()
            .into_iter()
            .filter(|s| s.state != ServerState::Connected && of_server(&s.name))
            .max_by_key(|s| s.name.len());
        match down {
            Some(s) => CallError::Unavailable {
                tool: name.to_string(),
                server: s.name,
                state: s.state,
                error: s.last_error,
            },
            None => CallError::UnknownTool(name.to_string()),
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
            .servers
            .locks
            .of(name)
            .try_lock_owned()
            .map_err(|_| AddError::Busy(name.to_string()))?;
        if !self.servers.insert(name, config.clone()) {
            return Err(AddError::Taken(name.to_string()));
        }
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

    /// Forgets the catalog kept of server `name` (its entry left the config file).
    pub(crate) fn forget_catalog(&self, name: &str) {
        self.servers.forget_catalog(name)
    }

    /// Marks a server whose connect is pending ([`Manager::begin_add`]) as running from
    /// `start` (an on-demand one is stopped once its catalog is filled).
    pub(crate) fn set_pending_start(&self, name: &str, start: Start) {
        if let Some(slot) = self.servers.slots().get_mut(name) {
            slot.set_start(start);
        }
    }

    /// The first, immediate half of [`Manager::remove`]: the server leaves the slots and the
    /// registry. `None` if there is no such server; else its client, for
    /// [`Manager::close_detached`].
    pub(crate) fn detach(&self, name: &str) -> Option<Option<Arc<Client>>> {
        self.servers.detach(name)
    }

    /// The second half of [`Manager::remove`]: closes the client and waits out a connect of
    /// this name in flight (which closes what it made, finding its slot gone).
    pub(crate) async fn close_detached(&self, name: &str, client: Option<Arc<Client>>) {
        self.servers.close_detached(name, client).await
    }

    /// A server's resources, templates and prompts as last listed (empty while it is not
    /// connected); `None` when there is no server of this name.
    pub fn catalog(&self, server: &str) -> Option<Catalog> {
        self.servers
            .slots()
            .get(server)
            .map(|slot| slot.catalog.lists().clone())
    }

    /// The resources a server is followed for ([`Manager::subscribe`]).
    pub fn subscriptions(&self, server: &str) -> Vec<String> {
        let slots = self.servers.slots();
        let slot = slots.get(server);
        slot.map(|s| s.catalog.subscriptions()).unwrap_or_default()
    }

    /// Reads a resource of a server: what the model sees of it, rendered and capped as a
    /// tool result is (the client's output cap, the truncation marker).
    pub async fn read_resource(&self, server: &str, uri: &str) -> Result<ResourceOutput> {
        self.read_resource_with(server, uri, RequestOptions::default())
            .await
    }

    /// [`Manager::read_resource`] with request options (timeout, trace context).
    pub async fn read_resource_with(
        &self,
        server: &str,
        uri: &str,
        options: RequestOptions,
    ) -> Result<ResourceOutput> {
        let (client, _in_use) = self
            .servers
            .live_client(server, methods::RESOURCES_READ)
            .await?;
        client.read_resource_with(uri, options).await
    }

    /// Loads a file of a skill of server `server`, found in its last listed skills by `key`:
    /// a skill's name or `SKILL.md` URI (its `SKILL.md`), or the URI of one of its files. The
    /// file is read and verified as [`Client::read_skill_file`] does (the digest, the size,
    /// and a `SKILL.md`'s frontmatter against the entry). Returns the skill's entry and the
    /// file.
    pub async fn load_skill(&self, server: &str, key: &str) -> Result<(Skill, SkillFileContent)> {
        let method = methods::RESOURCES_READ;
        let (client, _in_use) = self.servers.live_client(server, method).await?;
        let (found, names) = {
            let slots = self.servers.slots();
            let skills = slots
                .get(server)
                .map_or(&[][..], |s| &s.catalog.lists().skills);
            let names: Vec<&str> = skills.iter().map(Skill::name).take(20).collect();
            (find_skill(skills, key), names.join(", "))
        };
        let Some((entry, uri)) = found else {
            let listed = if names.is_empty() {
                "none".into()
            } else {
                names
            };
            let why = format!(
                "{server} lists no skill or skill file {:?} (its skills: {})",
                crate::safe_text::escape_controls(key),
                crate::safe_text::escape_controls(&listed)
            );
            return Err(Error::new(server, ErrorKind::Usage(why)).during(method));
        };
        let content = client.read_skill_file(&entry, &uri).await?;
        Ok((entry, content))
    }

    /// Reads a `ui://` resource of a server whole, for a host that renders MCP Apps
    /// ([`Client::read_ui_resource`]): its HTML, MIME type and checked `_meta.ui`, bounded
    /// by [`MAX_UI_RESOURCE`](crate::MAX_UI_RESOURCE), not by the model's cap.
    pub async fn read_ui_resource(&self, server: &str, uri: &str) -> Result<crate::UiResource> {
        let (client, _in_use) = self
            .servers
            .live_client(server, methods::RESOURCES_READ)
            .await?;
        client.read_ui_resource(uri).await
    }

    /// Fills in a prompt of a server with its arguments (`prompts/get`).
    pub async fn get_prompt(
        &self,
        server: &str,
        prompt: &str,
        arguments: Value,
    ) -> Result<PromptContents> {
        self.get_prompt_with(server, prompt, arguments, RequestOptions::default())
            .await
    }

    /// [`Manager::get_prompt`] with request options (timeout, trace context).
    pub async fn get_prompt_with(
        &self,
        server: &str,
        prompt: &str,
        arguments: Value,
        options: RequestOptions,
    ) -> Result<PromptContents> {
        let (client, _in_use) = self
            .servers
            .live_client(server, methods::PROMPTS_GET)
            .await?;
        client.get_prompt_with(prompt, arguments, options).await
    }

    /// Asks a server for values of an argument of one of its prompts or resource templates
    /// (`completion/complete`): `value` is what is typed so far, `context` the arguments
    /// already chosen.
    pub async fn complete(
        &self,
        server: &str,
        reference: &CompletionRef,
        argument: &str,
        value: &str,
        context: &[(String, String)],
    ) -> Result<Completion> {
        let method = methods::COMPLETION_COMPLETE;
        let (client, _in_use) = self.servers.live_client(server, method).await?;
        client.complete(reference, argument, value, context).await
    }

    /// Follows a resource of a server: its changes come as [`Event::ResourceUpdated`] on
    /// [`Manager::events`] (once [`Manager::watch`] runs). Kept across reconnects; at most
    /// [`MAX_SUBSCRIPTIONS`] a server. A stateless (2026-07-28) server is followed on its
    /// `subscriptions/listen` stream, an initialize-era one with `resources/subscribe`.
    pub async fn subscribe(&self, server: &str, uri: &str) -> Result<()> {
        let method = methods::RESOURCES_SUBSCRIBE;
        let (client, _in_use) = self.servers.live_client(server, method).await?;
        // Followed before the server is asked: the update it may send at once is announced
        // (only followed resources are).
        let added = match self.servers.slots().get_mut(server) {
            Some(slot) => slot.catalog.follow(server, uri),
            None => Err(no_such_server(server)),
        };
        let added = added.map_err(|e| e.during(method))?;
        if client.details().era != Era::Stateless
            && let Err(e) = client.subscribe(uri).await
        {
            if added && let Some(slot) = self.servers.slots().get_mut(server) {
                slot.catalog.unfollow(uri);
            }
            return Err(e);
        }
        Ok(())
    }

    /// Stops following a resource ([`Manager::subscribe`]).
    pub async fn unsubscribe(&self, server: &str, uri: &str) -> Result<()> {
        let method = methods::RESOURCES_UNSUBSCRIBE;
        let (client, _in_use) = self.servers.live_client(server, method).await?;
        let followed = match self.servers.slots().get_mut(server) {
            Some(slot) => slot.catalog.unfollow(uri),
            None => return Err(no_such_server(server).during(method)),
        };
        if followed && client.details().era != Era::Stateless {
            client.unsubscribe(uri).await?;
        }
        Ok(())
    }

    /// Runs a host tool ([`LIST_RESOURCES_TOOL`], [`READ_RESOURCE_TOOL`], [`LOAD_SKILL_TOOL`])
    /// through the gate;
    /// `None` when `name` is not one.
    async fn call_host_tool(
        &self,
        name: &str,
        arguments: &Value,
        mode: PermissionMode,
        options: &RequestOptions,
    ) -> Option<Result<ToolOutput, CallError>> {
        if ![LIST_RESOURCES_TOOL, READ_RESOURCE_TOOL, LOAD_SKILL_TOOL].contains(&name) {
            return None;
        }
        let Some(server) = text_argument(arguments, "server") else {
            let why = format!("{name} needs \"server\": one of the servers its description names");
            return Some(Ok(error_output(why)));
        };
        let gate = &self.servers.gate;
        if let Err(denied) = gate.check(name, Some(server), arguments, mode).await {
            return Some(Err(CallError::Denied(denied)));
        }
        let cap = self.servers.options.client.output_cap;
        if name == LOAD_SKILL_TOOL {
            let Some(skill) = text_argument(arguments, "skill") else {
                let why =
                    format!("{name} needs \"skill\": one of the skills its description names");
                return Some(Ok(error_output(why)));
            };
            let key = text_argument(arguments, "file").unwrap_or(skill);
            return Some(match self.load_skill(server, key).await {
                Ok((entry, content)) => Ok(loaded_skill(&entry, &content, cap)),
                Err(e) => Err(CallError::Server(e)),
            });
        }
        if name == LIST_RESOURCES_TOOL {
            return Some(Ok(match self.catalog(server) {
                Some(catalog) => listing(server, &catalog, cap),
                None => error_output(format!(
                    "there is no MCP server {:?}",
                    crate::safe_text::escape_controls(server)
                )),
            }));
        }
        let Some(uri) = text_argument(arguments, "uri") else {
            let why = format!("{name} needs \"uri\": a resource's URI from {LIST_RESOURCES_TOOL}");
            return Some(Ok(error_output(why)));
        };
        Some(
            match self.read_resource_with(server, uri, options.clone()).await {
                Ok(read) => Ok(ToolOutput {
                    text: read.text,
                    total_bytes: read.total_bytes,
                    is_error: false,
                }),
                Err(e) => Err(CallError::Server(e)),
            },
        )
    }

    /// Every tool of server `name` as it last listed them, hidden ones included: each with
    /// its registered name and whether its filter lets the model see it. `None` if there is
    /// no such server.
    pub fn server_tools(&self, name: &str) -> Option<Vec<ServerTool>> {
        self.servers
            .slots()
            .get(name)
            .map(|s| s.tools.server_tools(name))
    }

    /// Server `name`'s tool filter now. `None` if there is no such server.
    pub fn tool_filter(&self, name: &str) -> Option<ToolFilter> {
        self.servers
            .slots()
            .get(name)
            .map(|s| s.tools.filter().clone())
    }

    /// Replaces server `name`'s tool filter and registers its tools again under it; false if
    /// there is no such server. The config file is not touched ([`Control`](crate::host::Control) saves it).
    pub fn set_tool_filter(&self, name: &str, filter: ToolFilter) -> bool {
        let mut slots = self.servers.slots();
        let Some(slot) = slots.get_mut(name) else {
            return false;
        };
        slot.tools.set_filter(filter);
        if self.servers.registered.is_on() {
            self.servers.register_slot(name, slot);
        }
        true
    }

    /// Disables server `name` (closed, unregistered, [`ServerState::Disabled`], not
    /// reconnected until enabled) or enables it again (connected and registered like a new
    /// server). Returns its status; `None` if there is no such server. The config file is not
    /// touched ([`Control`](crate::host::Control) saves it).
    pub async fn set_enabled(&self, name: &str, enabled: bool) -> Option<ServerStatus> {
        if enabled {
            let lock = self.servers.locks.of(name);
            let _held = lock.lock().await;
            let was_disabled = self.servers.slots().get_mut(name)?.enable();
            if was_disabled {
                let _ = self.servers.reconnect_locked(name).await;
            }
        } else {
            let client = {
                let mut slots = self.servers.slots();
                let slot = slots.get_mut(name)?;
                let client = slot.disable();
                self.servers.register_slot(name, slot);
                client
            };
            self.servers
                .publish_state(name, Some(ServerState::Disabled), None);
            if let Some(client) = client {
                client.close().await;
            }
        }
        self.servers.server_status(name)
    }

    /// Changes when server `name` runs ([`Start`]): made on demand, it keeps running until
    /// it is idle past its timeout (its catalog kept from now on); made to run from launch,
    /// an idle one is started now. Returns its status; `None` if there is no such server. The
    /// config file is not touched ([`Control`](crate::host::Control) saves it).
    pub async fn set_start(&self, name: &str, start: Start) -> Option<ServerStatus> {
        let lock = self.servers.locks.of(name);
        let _held = lock.lock().await;
        let (client, starts_now) = {
            let mut slots = self.servers.slots();
            let slot = slots.get_mut(name)?;
            slot.set_start(start);
            self.servers.register_slot(name, slot);
            let idle = matches!(slot.state(), ServerState::Idle | ServerState::Failed);
            (
                slot.client().cloned(),
                !start.is_on_demand() && idle && slot.reconnectable(),
            )
        };
        if starts_now {
            let _ = self.servers.reconnect_locked(name).await;
        } else if let Some(client) = client {
            self.servers.keep_catalog(name, &client);
        }
        self.servers.stop_idle_servers();
        self.servers.server_status(name)
    }

    /// Closes one server's connection, connects it again, lists and re-registers its tools.
    pub async fn reconnect_server(&self, name: &str) -> Result<()> {
        let lock = self.servers.locks.of(name);
        let _held = lock.lock().await;
        self.servers.reconnect_locked(name).await.map(drop)
    }

    /// Reconnects every server at once (failed ones included, invalid entries excepted) and
    /// returns each outcome, sorted by server name.
    pub async fn reconnect(&self) -> Vec<(String, Result<()>)> {
        let names: Vec<String> = self
            .servers
            .slots()
            .iter()
            .filter(|(_, s)| s.reconnectable())
            .map(|(n, _)| n.clone())
            .collect();
        let mut set = tokio::task::JoinSet::new();
        for name in names {
            let manager = self.clone();
            set.spawn(async move {
                let result = manager.reconnect_server(&name).await;
                (name, result)
            });
        }
        let mut outcomes = Vec::new();
        while let Some(joined) = set.join_next().await {
            if let Ok(outcome) = joined {
                outcomes.push(outcome);
            }
        }
        outcomes.sort_by(|a, b| a.0.cmp(&b.0));
        outcomes
    }

    /// The search index of the visible (registered) tools now, built again after each
    /// change of the registry.
    pub fn tool_index(&self) -> Arc<ToolIndex> {
        self.servers.tool_index()
    }

    /// The registered tools that best match `query`, best first (at most `limit`, and
    /// [`MAX_SEARCH_LIMIT`](crate::host::MAX_SEARCH_LIMIT)): what the search tool returns, and `GET
    /// /v1/mcp/tools/search`. Their scores: [`ToolIndex::matches`] of [`Manager::tool_index`].
    pub fn search_tools(&self, query: &str, limit: usize) -> Vec<RegisteredTool> {
        let index = self.tool_index();
        index.search(query, limit).into_iter().cloned().collect()
    }

    /// Whether tool search is on and the visible tools' definitions are over its budget:
    /// then [`Manager::offered_tools`] offers the search tool.
    pub fn tool_search_active(&self) -> bool {
        self.servers.registered.search_active(&self.tool_index())
    }

    /// The definitions to offer the model in `conversation`: every visible tool's while
    /// tool search is off or under its budget; else the search tool ([`SEARCH_TOOL`]) and
    /// the tools the conversation found, first found first.
    pub fn offered_tools(&self, conversation: &Conversation) -> Vec<ToolDefinition> {
        if !self.tool_search_active() {
            return self.tool_definitions();
        }
        let host_tools = self.servers.host_tool_definitions();
        self.servers.registered.offered(host_tools, conversation)
    }

    /// [`Manager::call`] within a conversation: [`SEARCH_TOOL`] runs the search (arguments
    /// `query` and `limit`), records the tools it found in `conversation` and returns their
    /// definitions as JSON, each with its score and whether it is weak (`{"tools": [{...,
    /// "score", "weak"}]}`, see [`ToolMatch`](crate::host::ToolMatch)); any other name is
    /// called as [`Manager::call`] does, found or not.
    pub async fn call_in(
        &self,
        conversation: &Conversation,
        name: &str,
        arguments: Value,
        mode: PermissionMode,
    ) -> Result<ToolOutput, CallError> {
        if name != SEARCH_TOOL {
            return self.call(name, arguments, mode).await;
        }
        let (query, limit) = search_arguments(&arguments);
        let index = self.tool_index();
        let found = index.matches(query, limit);
        conversation.add_found(found.iter().map(|m| m.tool.definition.name.as_str()));
        Ok(search_output(query, &found))
    }
}
