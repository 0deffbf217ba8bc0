//! [`Control`]: the management operations every surface shares (the API of `agenvoy-mcp
//! serve`, the `/mcp` panel, an embedder's own), over one [`Manager`], its config file, its
//! allowlist and its OAuth token store, so that the surfaces never disagree.
//!
//! Each change of a file is a read-modify-write under two locks: an in-process one (one
//! change at a time in this process) and, inside it, an advisory lock file shared with other
//! processes (a daemon and a panel may run at once; see `crate::filelock`). The file is read again
//! every time, so no change made elsewhere is lost, and members this crate does not know
//! survive. When there is no config file, the config the manager started with (the embedded
//! default, say) stands for it where it is read, but never where it is written: the first
//! server added makes a file that holds that server only. The servers of that config run on
//! until the manager closes, by one rule: they are shown, called and reconnected, and every
//! change of one (remove, enable, disable, its tools' visibility, its OAuth client) is
//! refused with one [`ControlError::Conflict`] that says to add a server of one's own.
//!
//! Adding a server saves the file and takes the name in the manager under the lock, then
//! connects outside it ([`Control::begin_add_server`], [`AddingServer::connect`]), so a slow
//! server holds up no other change; a save that fails gives the name back. Removing saves the
//! file and takes the server out under the lock, then closes it outside.
//!
//! Errors are [`ControlError`]s: bad input, a conflict, something not found, a failed login,
//! or a file that could not be read or saved; each says what to do.

use super::config::{Config, ServerConfig, is_valid_server_name};
use super::events::{Event, EventBus};
use super::filter::ToolFilter;
use super::gate::Allowlist;
#[cfg(feature = "oauth")]
use super::manager::ServerState;
use super::manager::{CallError, Catalog, Manager, PendingAdd, ServerStatus, ServerTool};
use super::registry::{PREFIX, RegisteredTool, Registry, ToolDefinition};
use super::start::Start;
use super::tool_search::{Conversation, ToolIndex};
use crate::client::Client;
use crate::filelock::{self, LOCK_WAIT};
use crate::protocol::items::{Completion, CompletionRef, PromptContents, ResourceOutput};
use crate::protocol::session::RequestOptions;
use serde_json::Value;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tokio::sync::broadcast;

mod calls;
mod error;
#[cfg(feature = "oauth")]
mod login;

pub use calls::{CallOutcome, DEFAULT_MAX_CALLS_PER_SERVER, ToolCall};
pub use error::ControlError;
#[cfg(feature = "oauth")]
pub use login::{Login, LoginEvent, LoginOptions, OAuthClient};

/// `server` with a command typed relative to the current folder (`./server.sh`,
/// `bin/server`) made absolute, so it still runs when the config is read from another folder;
/// a bare name (`npx`) is left for `PATH`.
fn with_absolute_command(mut server: ServerConfig) -> Result<ServerConfig, ControlError> {
    if let ServerConfig::Stdio(stdio) = &mut server {
        let command = Path::new(&stdio.command);
        if command.components().count() > 1 && command.is_relative() {
            let absolute = std::path::absolute(command).map_err(|e| {
                ControlError::Failed(format!(
                    "cannot make the command {:?} an absolute path: {e}; give its full path",
                    stdio.command
                ))
            })?;
            stdio.command = absolute.display().to_string();
        }
    }
    Ok(server)
}

/// One file's read-modify-write lock: in this process, then across processes.
struct FileGuard {
    path: PathBuf,
    local: tokio::sync::Mutex<()>,
}

/// Both locks of a [`FileGuard`], held.
struct Held<'a> {
    _local: tokio::sync::MutexGuard<'a, ()>,
    _file: filelock::FileLock,
}

impl FileGuard {
    fn new(path: PathBuf) -> FileGuard {
        FileGuard {
            path,
            local: tokio::sync::Mutex::new(()),
        }
    }

    async fn hold(&self) -> Result<Held<'_>, ControlError> {
        let local = self.local.lock().await;
        let file = filelock::lock(&self.path, LOCK_WAIT).await.map_err(|e| {
            ControlError::Failed(format!("cannot lock {}: {e}", self.path.display()))
        })?;
        Ok(Held {
            _local: local,
            _file: file,
        })
    }
}

struct Inner {
    manager: Manager,
    config: FileGuard,
    allowlist: FileGuard,
    calls: calls::CallRules,
    #[cfg(feature = "oauth")]
    oauth: login::OAuthState,
}

/// The management operations over one manager, its config file, allowlist and token store.
/// Cloning shares it (and its locks and logins in progress).
#[derive(Clone)]
pub struct Control {
    inner: Arc<Inner>,
}

impl fmt::Debug for Control {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Control")
            .field("config_path", &self.inner.config.path)
            .field("allowlist_path", &self.inner.allowlist.path)
            .finish_non_exhaustive()
    }
}

/// A server whose entry is saved and whose name the manager holds, not connected yet.
pub struct AddingServer {
    name: String,
    pending: PendingAdd,
}

impl fmt::Debug for AddingServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AddingServer")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl AddingServer {
    /// The server's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Connects the server and lists its tools; returns its status (a server that cannot
    /// connect is still added, and shown failed). Fails only if it was removed meanwhile.
    pub async fn connect(self) -> Result<ServerStatus, ControlError> {
        Ok(self.pending.connect().await?)
    }
}

impl Control {
    /// Control over `manager`, whose config file is `config_path` (it need not exist yet);
    /// the allowlist is the manager's gate's, the token store the manager's.
    pub fn new(manager: Manager, config_path: PathBuf) -> Control {
        #[cfg(feature = "oauth")]
        let store = manager.token_store();
        Control::build(
            manager,
            config_path,
            #[cfg(feature = "oauth")]
            store,
        )
    }

    /// [`Control::new`] with OAuth tokens and client secrets kept in `store` (which should be
    /// the one the manager connects with).
    #[cfg(feature = "oauth")]
    pub fn with_token_store(
        manager: Manager,
        config_path: PathBuf,
        store: Arc<dyn crate::auth::TokenStore>,
    ) -> Control {
        Control::build(manager, config_path, store)
    }

    fn build(
        manager: Manager,
        config_path: PathBuf,
        #[cfg(feature = "oauth")] store: Arc<dyn crate::auth::TokenStore>,
    ) -> Control {
        let allowlist = manager.gate().allowlist_path().to_path_buf();
        Control {
            inner: Arc::new(Inner {
                manager,
                config: FileGuard::new(config_path),
                allowlist: FileGuard::new(allowlist),
                calls: calls::CallRules::default(),
                #[cfg(feature = "oauth")]
                oauth: login::OAuthState::new(store),
            }),
        }
    }

    fn manager(&self) -> &Manager {
        &self.inner.manager
    }

    /// The config file.
    pub fn config_path(&self) -> &Path {
        &self.inner.config.path
    }

    /// The allowlist file.
    pub fn allowlist_path(&self) -> &Path {
        &self.inner.allowlist.path
    }

    /// The config file as it is now; when there is none, the config the manager started
    /// with, which stands in for it (read, never written: see the module docs).
    pub fn config(&self) -> Result<Config, ControlError> {
        let config = Config::load(self.config_path())
            .map_err(|e| ControlError::Failed(format!("{e}; fix the file, then try again")))?;
        Ok(if config.found() {
            config
        } else {
            self.manager().config().clone()
        })
    }

    /// The config file as it is now, to change and save: empty when there is none (what the
    /// manager started with instead is not the user's to write into the file).
    fn file_config(&self) -> Result<Config, ControlError> {
        Config::load(self.config_path())
            .map_err(|e| ControlError::Failed(format!("{e}; fix the file, then try again")))
    }

    /// Whether server `name` comes from the config that stood in for a missing config file
    /// (see the module docs): the manager started with no file, whose config has it, and the
    /// file (`file`, as it is now) does not.
    fn stands_in(&self, file: &Config, name: &str) -> bool {
        let started_with = self.manager().config();
        !started_with.found()
            && started_with.server_value(name).is_some()
            && file.server_value(name).is_none()
    }

    /// The one answer to a change of a server that stands in for a missing config file.
    fn refuse_stand_in(&self, name: &str) -> ControlError {
        ControlError::Conflict(format!(
            "server {name:?} is not in {}: it comes with the default config used when that file did not exist, which is never written, so it cannot be changed; add a server of your own (POST /v1/mcp, or `a` in the panel): the file then holds yours, and the next start uses only the file",
            self.config_path().display()
        ))
    }

    fn save_config(&self, config: &Config) -> Result<(), ControlError> {
        config
            .save(self.config_path())
            .map_err(|e| ControlError::Failed(e.to_string()))
    }

    fn is_running(&self, name: &str) -> bool {
        self.server_status(name).is_some()
    }

    /// Adds a server: saved, then connected and registered; returns its status.
    pub async fn add_server(
        &self,
        name: &str,
        server: ServerConfig,
    ) -> Result<ServerStatus, ControlError> {
        self.begin_add_server(name, server).await?.connect().await
    }

    /// The first half of [`Control::add_server`]: the name is checked and taken in the
    /// manager (the server shows as `connecting`) and the entry saved; nothing is saved when
    /// this fails.
    pub async fn begin_add_server(
        &self,
        name: &str,
        server: ServerConfig,
    ) -> Result<AddingServer, ControlError> {
        let _held = self.inner.config.hold().await?;
        let mut config = self.file_config()?;
        if config.server_value(name).is_some() {
            return Err(ControlError::Conflict(format!(
                "a server named {name:?} is already in the config; remove it first or pick another name"
            )));
        }
        let server = with_absolute_command(server)?;
        let pending = self.manager().begin_add(name, server.clone())?;
        config
            .set_server(name, &server)
            .map_err(|e| ControlError::Invalid(e.to_string()))?;
        if let Err(e) = self.save_config(&config) {
            self.manager().detach(name);
            return Err(e);
        }
        Ok(AddingServer {
            name: name.to_string(),
            pending,
        })
    }

    /// Removes a server: out of the file, closed and unregistered; its OAuth tokens and
    /// client secret are forgotten.
    pub async fn remove_server(&self, name: &str) -> Result<(), ControlError> {
        let client = {
            let _held = self.inner.config.hold().await?;
            let mut config = self.file_config()?;
            if self.stands_in(&config, name) {
                return Err(self.refuse_stand_in(name));
            }
            let in_file = config.remove_server(name);
            if !in_file && !self.is_running(name) {
                return Err(ControlError::NotFound(format!(
                    "no server named {name:?} in {} or running; check the name",
                    self.config_path().display()
                )));
            }
            if in_file {
                self.save_config(&config)?;
            }
            self.manager().detach(name)
        };
        if let Some(client) = client {
            self.manager().close_detached(name, client).await;
        }
        self.manager().forget_catalog(name);
        #[cfg(feature = "oauth")]
        if let Err(e) = super::oauth::forget_server(self.inner.oauth.store.as_ref(), name) {
            tracing::warn!(server = %name, "removed, but its OAuth tokens could not be forgotten: {e}");
        }
        Ok(())
    }

    /// The config file as it is now, for a change of server `name`'s own entry: an error
    /// when the server is not in the file.
    fn file_config_with(&self, name: &str) -> Result<Config, ControlError> {
        let config = self.file_config()?;
        if self.stands_in(&config, name) {
            return Err(self.refuse_stand_in(name));
        }
        if config.server_value(name).is_none() {
            let running = if self.is_running(name) {
                " (it runs from the config the manager started with; add it to the file first)"
            } else {
                ""
            };
            return Err(ControlError::NotFound(format!(
                "no server named {name:?} in {}{running}; check the name",
                self.config_path().display()
            )));
        }
        Ok(config)
    }

    /// Enables or disables server `name`: its entry's `"enabled"` is saved (only that member
    /// changes), then a disabled server is closed and unregistered, an enabled one connected
    /// and registered. Nothing is written when the server is not in the file.
    pub async fn set_enabled(&self, name: &str, enabled: bool) -> Result<(), ControlError> {
        let adding = {
            let _held = self.inner.config.hold().await?;
            let mut config = self.file_config_with(name)?;
            let server = match config.server(name) {
                Some(Ok(server)) => server,
                Some(Err(e)) => {
                    return Err(ControlError::Invalid(format!("{e}; fix the entry first")));
                }
                None => unreachable!("checked above"),
            };
            config
                .set_enabled(name, enabled)
                .map_err(|e| ControlError::Invalid(e.to_string()))?;
            self.save_config(&config)?;
            if !self.is_running(name) && enabled {
                let pending = self.manager().begin_add(name, server)?;
                if let Some(Ok(filter)) = config.tool_filter(name) {
                    self.manager().set_tool_filter(name, filter);
                }
                if let Some(Ok(start)) = config.start(name) {
                    self.manager().set_pending_start(name, start);
                }
                Some(pending)
            } else {
                None
            }
        };
        match adding {
            Some(pending) => {
                pending.connect().await?;
            }
            None => {
                self.manager().set_enabled(name, enabled).await;
            }
        }
        Ok(())
    }

    /// Changes when server `name` runs ([`Start`]): its entry's `"start"` and
    /// `"idle_timeout"` are saved (only those members change), then the manager follows
    /// ([`Manager::set_start`](crate::host::Manager::set_start)). Nothing is written when the
    /// server is not in the file.
    pub async fn set_start(&self, name: &str, start: Start) -> Result<(), ControlError> {
        {
            let _held = self.inner.config.hold().await?;
            let mut config = self.file_config_with(name)?;
            config
                .set_start(name, start)
                .map_err(|e| ControlError::Invalid(e.to_string()))?;
            self.save_config(&config)?;
        }
        self.manager().set_start(name, start).await;
        Ok(())
    }

    /// Replaces server `name`'s tool filter (`"enabled_tools"`, `"disabled_tools"`): checked,
    /// saved (only those members of that entry change), and the server's tools registered
    /// again under it. A bad pattern, a pattern that reaches another server, or lists that
    /// contradict are [`ControlError::Invalid`], and nothing is written.
    pub async fn set_tool_filter(
        &self,
        name: &str,
        filter: ToolFilter,
    ) -> Result<ToolFilter, ControlError> {
        self.edit_filter(name, |_, _| Ok(filter)).await
    }

    /// Shows (`visible`) or hides one tool of server `server` (`tool`: its name on the
    /// server, or its registered name), or with `tool` `None` every tool of it (showing all
    /// clears both lists; hiding all is `"enabled_tools": []`). A tool is changed alone: a
    /// pattern that covered it is replaced by the names of the others it covered. Returns
    /// the new filter.
    pub async fn set_tool_visible(
        &self,
        server: &str,
        tool: Option<&str>,
        visible: bool,
    ) -> Result<ToolFilter, ControlError> {
        let listed = self.manager().server_tools(server).unwrap_or_default();
        let tool = match tool {
            None => None,
            Some(t) => Some(
                listed
                    .iter()
                    .find(|l| l.tool == t || l.name == t)
                    .map(|l| l.tool.clone())
                    .or_else(|| (!t.starts_with(PREFIX)).then(|| t.to_string()))
                    .ok_or_else(|| {
                        ControlError::NotFound(format!(
                            "server {server:?} has no tool registered as {:?}; give the tool's own name",
                            crate::safe_text::escape_controls(t)
                        ))
                    })?,
            ),
        };
        self.edit_filter(server, |current, _| {
            Ok(match &tool {
                None if visible => ToolFilter::all(),
                None => ToolFilter {
                    enabled_tools: Some(Vec::new()),
                    disabled_tools: Vec::new(),
                },
                Some(tool) => {
                    let others: Vec<&str> = listed.iter().map(|l| l.tool.as_str()).collect();
                    current.with_tool(tool, visible, &others)
                }
            })
        })
        .await
    }

    /// The one read-modify-write of a server's filter: `change` gets the filter in the file
    /// now and the server's name, and gives the new one.
    async fn edit_filter(
        &self,
        name: &str,
        change: impl FnOnce(&ToolFilter, &str) -> Result<ToolFilter, ControlError>,
    ) -> Result<ToolFilter, ControlError> {
        let _held = self.inner.config.hold().await?;
        let mut config = self.file_config_with(name)?;
        let current = match config.tool_filter(name) {
            Some(Ok(filter)) => filter,
            Some(Err(e)) => {
                return Err(ControlError::Invalid(format!("{e}; fix the entry first")));
            }
            None => unreachable!("checked above"),
        };
        let filter = change(&current, name)?;
        config
            .set_tool_filter(name, &filter)
            .map_err(|e| ControlError::Invalid(e.to_string()))?;
        self.save_config(&config)?;
        self.manager().set_tool_filter(name, filter.clone());
        Ok(filter)
    }

    /// The allowlist as it is in the file now.
    pub fn allowlist(&self) -> Result<Allowlist, ControlError> {
        let path = self.allowlist_path();
        Allowlist::load(path)
            .map_err(|e| ControlError::Failed(format!("cannot read {}: {e}", path.display())))
    }

    /// Replaces the allowlist entries of one server, `prefix` `mcp__<server>__`, with
    /// `entries` (each starting with it); every other entry stays. Returns the new list.
    pub async fn set_allowed(
        &self,
        prefix: &str,
        entries: &[String],
    ) -> Result<Allowlist, ControlError> {
        let server = prefix
            .strip_prefix(PREFIX)
            .and_then(|rest| rest.strip_suffix("__"))
            .filter(|server| is_valid_server_name(server));
        if server.is_none() {
            return Err(ControlError::Invalid(format!(
                "prefix {prefix:?} is not mcp__<server>__"
            )));
        }
        self.edit_allowed(prefix, |_| Ok(entries.to_vec())).await
    }

    /// Toggles whether the registered tool `name` (`mcp__<server>__<tool>`) is approved
    /// without asking. Turning it off where a `mcp__<server>__*` (or narrower `*`) entry
    /// approved it keeps the server's other tools that entry approved, one entry each.
    /// Returns the new list.
    pub async fn toggle_tool(&self, name: &str) -> Result<Allowlist, ControlError> {
        let registry = self.manager().registry();
        let server = registry
            .resolve(name)
            .map(|(server, _)| server.to_string())
            .ok_or_else(|| {
                ControlError::NotFound(format!("no MCP tool named {name} is registered"))
            })?;
        let name = name.to_string();
        let others: Vec<String> = registry
            .server_tools(&server)
            .into_iter()
            .map(|t| t.definition.name.clone())
            .filter(|n| *n != name)
            .collect();
        let prefix = server_prefix(&server)?;
        self.edit_allowed(&prefix, |list| {
            let mine = prefix_entries(list, &prefix);
            if !list.allows(&name, Some(&server)) {
                return Ok(mine.into_iter().chain([name.clone()]).collect());
            }
            let (removed, mut kept): (Vec<String>, Vec<String>) = mine
                .into_iter()
                .partition(|e| Allowlist::parse(e).allows(&name, Some(&server)));
            let before = Allowlist::parse(&removed.join("\n"));
            for other in &others {
                if before.allows(other, Some(&server)) && !kept.contains(other) {
                    kept.push(other.clone());
                }
            }
            // Only this server's own entries can approve its tools (see `gate`), so the
            // tool is off now.
            Ok(kept)
        })
        .await
    }

    /// Toggles `mcp__<server>__*`: on, it replaces the server's entries; off, the server has
    /// none. Returns the new list.
    pub async fn toggle_server(&self, server: &str) -> Result<Allowlist, ControlError> {
        let prefix = server_prefix(server)?;
        let all = format!("{prefix}*");
        self.edit_allowed(&prefix, |list| {
            let on = prefix_entries(list, &prefix).contains(&all);
            Ok(if on { Vec::new() } else { vec![all.clone()] })
        })
        .await
    }

    /// The one read-modify-write of the allowlist: `change` gets the list as it is in the
    /// file now and gives `prefix`'s new entries.
    async fn edit_allowed(
        &self,
        prefix: &str,
        change: impl FnOnce(&Allowlist) -> Result<Vec<String>, ControlError>,
    ) -> Result<Allowlist, ControlError> {
        let path = self.allowlist_path();
        let _held = self.inner.allowlist.hold().await?;
        let mut list = self.allowlist()?;
        let entries = change(&list)?;
        list.replace_prefix(prefix, &entries)
            .map_err(|e| ControlError::Invalid(e.to_string()))?;
        list.save(path)
            .map_err(|e| ControlError::Failed(format!("cannot save {}: {e}", path.display())))?;
        Ok(list)
    }
}

/// The servers as the manager has them now, what they offer, and what they are asked: the
/// one door of every front end to the running servers.
impl Control {
    /// Every server's status, in name order.
    pub fn status(&self) -> Vec<ServerStatus> {
        self.manager().status()
    }

    /// Server `name`'s status; `None` if the manager does not run it.
    pub fn server_status(&self, name: &str) -> Option<ServerStatus> {
        self.manager().status().into_iter().find(|s| s.name == name)
    }

    /// Server `name`'s client while it is connected (its details: instructions,
    /// capabilities, version).
    pub fn client(&self, name: &str) -> Option<Arc<Client>> {
        self.manager().client(name)
    }

    /// Server `name`'s instructions ([`Manager::server_instructions`]).
    pub fn server_instructions(&self, name: &str) -> Option<String> {
        self.manager().server_instructions(name)
    }

    /// The registered tools, and the names that collided.
    pub fn registry(&self) -> Registry {
        self.manager().registry()
    }

    /// Server `name`'s tools, the hidden ones too; `None` if there is no such server.
    pub fn server_tools(&self, name: &str) -> Option<Vec<ServerTool>> {
        self.manager().server_tools(name)
    }

    /// Every visible tool's definition, for the model.
    pub fn tool_definitions(&self) -> Vec<ToolDefinition> {
        self.manager().tool_definitions()
    }

    /// The registered tools that best match `query`, best first, at most `limit`.
    pub fn search_tools(&self, query: &str, limit: usize) -> Vec<RegisteredTool> {
        self.manager().search_tools(query, limit)
    }

    /// The search index of the visible tools now (see [`Manager::tool_index`]): its
    /// [`ToolIndex::matches`] give each found tool's score.
    pub fn tool_index(&self) -> Arc<ToolIndex> {
        self.manager().tool_index()
    }

    /// The definitions to offer the model in `conversation` (see [`Manager::offered_tools`]).
    pub fn offered_tools(&self, conversation: &Conversation) -> Vec<ToolDefinition> {
        self.manager().offered_tools(conversation)
    }

    /// Whether the model is offered the search tool instead of every definition.
    pub fn tool_search_active(&self) -> bool {
        self.manager().tool_search_active()
    }

    /// Server `name`'s resources, templates and prompts as last listed.
    pub fn catalog(&self, name: &str) -> Option<Catalog> {
        self.manager().catalog(name)
    }

    /// The resources of server `name` followed for updates.
    pub fn subscriptions(&self, name: &str) -> Vec<String> {
        self.manager().subscriptions(name)
    }

    /// A new listener on the manager's events.
    pub fn events(&self) -> broadcast::Receiver<Event> {
        self.manager().events()
    }

    /// The manager's event bus (how many listen; publishing).
    pub fn event_bus(&self) -> &EventBus {
        self.manager().event_bus()
    }

    /// Reconnects server `name` (see [`Manager::reconnect_server`]).
    pub async fn reconnect_server(&self, name: &str) -> crate::Result<()> {
        self.manager().reconnect_server(name).await
    }

    /// Reconnects every enabled server; each one's outcome.
    pub async fn reconnect(&self) -> Vec<(String, crate::Result<()>)> {
        self.manager().reconnect().await
    }

    /// Reads resource `uri` of server `server`, rendered and capped as a tool result is.
    pub async fn read_resource(&self, server: &str, uri: &str) -> crate::Result<ResourceOutput> {
        self.manager().read_resource(server, uri).await
    }

    /// A file of a skill of server `server`, verified: `key` is a skill's name or `SKILL.md`
    /// URI (its `SKILL.md`) or one of its files' URIs ([`Manager::load_skill`]).
    pub async fn load_skill(
        &self,
        server: &str,
        key: &str,
    ) -> crate::Result<(crate::Skill, crate::SkillFileContent)> {
        self.manager().load_skill(server, key).await
    }

    /// [`Control::read_resource`] with request options (timeout, trace context).
    pub async fn read_resource_with(
        &self,
        server: &str,
        uri: &str,
        options: RequestOptions,
    ) -> crate::Result<ResourceOutput> {
        self.manager()
            .read_resource_with(server, uri, options)
            .await
    }

    /// Reads the `ui://` resource `uri` of server `server` whole (MCP Apps): its HTML for a
    /// host to render, bounded by [`MAX_UI_RESOURCE`](crate::MAX_UI_RESOURCE), not by the
    /// model's cap.
    pub async fn read_ui_resource(
        &self,
        server: &str,
        uri: &str,
    ) -> crate::Result<crate::UiResource> {
        self.manager().read_ui_resource(server, uri).await
    }

    /// Prompt `prompt` of server `server`, filled in with `arguments` (an object of strings).
    pub async fn get_prompt(
        &self,
        server: &str,
        prompt: &str,
        arguments: Value,
    ) -> crate::Result<PromptContents> {
        self.manager().get_prompt(server, prompt, arguments).await
    }

    /// [`Control::get_prompt`] with request options (timeout, trace context).
    pub async fn get_prompt_with(
        &self,
        server: &str,
        prompt: &str,
        arguments: Value,
        options: RequestOptions,
    ) -> crate::Result<PromptContents> {
        let manager = self.manager();
        manager
            .get_prompt_with(server, prompt, arguments, options)
            .await
    }

    /// Server `server`'s completions of `argument` (typed so far: `value`) of a prompt or
    /// resource template.
    pub async fn complete(
        &self,
        server: &str,
        reference: &CompletionRef,
        argument: &str,
        value: &str,
        context: &[(String, String)],
    ) -> crate::Result<Completion> {
        let manager = self.manager();
        manager
            .complete(server, reference, argument, value, context)
            .await
    }

    /// Follows resource `uri` of server `server`: its updates come as
    /// [`Event::ResourceUpdated`].
    pub async fn subscribe(&self, server: &str, uri: &str) -> crate::Result<()> {
        self.manager().subscribe(server, uri).await
    }

    /// Stops following resource `uri` of server `server`.
    pub async fn unsubscribe(&self, server: &str, uri: &str) -> crate::Result<()> {
        self.manager().unsubscribe(server, uri).await
    }

    /// Makes a tool call under the rules every front end shares (see [`ToolCall`]): at most
    /// [`Control::set_max_calls_per_server`] in flight to one server, cancellable by its
    /// caller's id, progress published while anyone listens on the events.
    pub async fn call(&self, call: ToolCall) -> Result<CallOutcome, CallError> {
        self.inner.calls.call(self.manager(), call).await
    }

    /// Cancels the call running under the caller's id `id` (it fails with
    /// [`CallError::Cancelled`]; the server is told); false if none runs under it.
    pub fn cancel_call(&self, id: &str) -> bool {
        self.inner.calls.cancel(id)
    }

    /// Sets how many calls [`Control::call`] runs at once to one server (at least 1;
    /// [`DEFAULT_MAX_CALLS_PER_SERVER`] unless set).
    pub fn set_max_calls_per_server(&self, most: usize) {
        self.inner.calls.set_most_per_server(most);
    }

    /// Closes every server (see [`Manager::close`]).
    pub async fn close(&self) {
        self.manager().close().await;
    }
}

/// OAuth: a pre-registered client, logout, and logins with paste-back.
#[cfg(feature = "oauth")]
impl Control {
    /// The token store.
    pub fn token_store(&self) -> &Arc<dyn crate::auth::TokenStore> {
        &self.inner.oauth.store
    }

    /// Sets the pre-registered OAuth client of the `"auth": "oauth"` server `name`: the id
    /// and redirect URI go to its entry, the secret to the token store. Returns the redirect
    /// URI in force.
    pub async fn set_oauth_client(
        &self,
        name: &str,
        client: &OAuthClient,
    ) -> Result<String, ControlError> {
        let _held = self.inner.config.hold().await?;
        let mut config = self.file_config_with(name)?;
        let redirect_uri = self.inner.oauth.set_client(&mut config, name, client)?;
        self.save_config(&config)?;
        Ok(redirect_uri)
    }

    /// Forgets the tokens of the `"auth": "oauth"` server `name` and reconnects it, so it
    /// shows `needs login`; returns its state (`None` if the manager does not run it).
    pub async fn logout(&self, name: &str) -> Result<Option<ServerState>, ControlError> {
        self.inner.oauth.logout(&self.config()?, name).await?;
        if self.is_running(name)
            && let Err(e) = self.manager().reconnect_server(name).await
        {
            tracing::info!(server = %name, "logged out: {e}");
        }
        Ok(self.server_status(name).map(|s| s.state))
    }

    /// Starts an OAuth login to the `"auth": "oauth"` server `name` on a task of its own: a
    /// loopback listener (and the browser, if `options` say so) plus paste-back through
    /// [`Control::complete_login_by_paste`]. Its events come through the [`Login`]; a
    /// successful login reconnects the server before it says so. One login per server at a
    /// time; dropping the [`Login`] cancels it. Must be called within a tokio runtime.
    pub fn begin_login(&self, name: &str, options: LoginOptions) -> Result<Login, ControlError> {
        let config = self.config()?;
        let manager = self.manager().clone();
        self.inner.oauth.begin(config, name, options, manager)
    }

    /// Completes the login to `name` in progress with the URL the browser ended on (it must
    /// carry `code=` or `error=`); returns once the login has ended.
    pub async fn complete_login_by_paste(&self, name: &str, url: &str) -> Result<(), ControlError> {
        self.inner.oauth.paste(name, url).await
    }
}

/// `mcp__<server>__`, for a valid server name.
fn server_prefix(server: &str) -> Result<String, ControlError> {
    if let Some(problem) = super::config::server_name_problem(server) {
        return Err(ControlError::Invalid(problem));
    }
    Ok(format!("{PREFIX}{server}__"))
}

fn prefix_entries(list: &Allowlist, prefix: &str) -> Vec<String> {
    list.entries()
        .into_iter()
        .filter(|e| crate::host::gate::belongs_to(e, prefix))
        .map(str::to_string)
        .collect()
}
