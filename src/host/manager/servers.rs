//! The manager's servers ([`Servers`]): every server's [`Slot`] under one lock, the registry
//! of their tools, the per-server connect locks, and what changes them: a connect's outcome,
//! a refresh, a reconnect, a removal, the close. [`crate::host::Manager`] is the face the
//! embedder calls; this is what it runs on.

use super::catalog::{self, List, list_of, no_such_server};
use super::connect::{Connected, connect_and_list};
use super::kept_catalog::{CatalogStore, catalog_key};
use super::locks::ServerLocks;
use super::on_demand::{self, InUse};
use super::options::ManagerOptions;
use super::registered::Registered;
use super::slot::{Slot, not_connected};
use super::watch::{Changes, Following, Reread};
use crate::client::{Client, ListKeeping};
use crate::error::{Error, ErrorKind, Result};
use crate::host::config::{Config, ServerConfig};
use crate::host::events::Event;
use crate::host::gate::Gate;
use crate::host::registry::{Collision, Registry, ToolDefinition};
use crate::host::start::Start;
use crate::host::status::{STATUS_LOG, ServerState, ServerStatus};
use crate::host::tool_search::ToolIndex;
use crate::protocol::skills::Skill;
use crate::protocol::types::Tool;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

/// How long closing the manager waits for the catalogs being kept.
const SAVE_DEADLINE: std::time::Duration = std::time::Duration::from_secs(5);

/// Every server of a manager, and what they share. A manager's clones share one.
pub(super) struct Servers {
    pub(super) options: ManagerOptions,
    pub(super) gate: Gate,
    /// The config the manager was made from.
    pub(super) config: Config,
    /// Every server, under one lock (taken before the registry's, never after).
    slots: Mutex<BTreeMap<String, Slot>>,
    pub(super) registered: Registered,
    /// Whether new connections are followed ([`Manager::watch`](crate::host::Manager::watch)
    /// has run).
    watching: AtomicBool,
    pub(super) locks: ServerLocks,
    /// Turns true when [`Servers::close`] starts: connects in flight stop and close their
    /// transport, and no new one starts.
    closing: tokio::sync::watch::Sender<bool>,
    /// Where on-demand servers' catalogs are kept.
    catalogs: Arc<dyn CatalogStore>,
    /// Whether the task that stops idle on-demand servers runs.
    stopping_idle: AtomicBool,
    /// Catalogs being written ([`Servers::keep_catalog`]), waited for by the close.
    saves: Mutex<Vec<tokio::task::JoinHandle<()>>>,
}

impl Servers {
    /// The servers of `config`, each with its slot (an invalid entry failed, a disabled one
    /// unstarted), and the entries to connect.
    pub(super) fn new(
        config: Config,
        options: ManagerOptions,
    ) -> (Servers, Vec<(String, ServerConfig)>) {
        let gate = Gate::new(options.allowlist_path.clone(), options.confirm.clone());
        let catalogs = options.catalogs();
        let mut slots = BTreeMap::new();
        let mut to_connect = Vec::new();
        for (name, entry) in config.servers() {
            let enabled = config
                .is_enabled(&name)
                .and_then(Result::ok)
                .unwrap_or(true);
            let start = config.start(&name).and_then(Result::ok).unwrap_or_default();
            let mut kept = None;
            match &entry {
                Ok(_) if !enabled => tracing::info!(server = %name, "disabled in the config"),
                Ok(server) if start.is_on_demand() => {
                    kept = catalogs
                        .load(&name, &catalog_key(server))
                        .filter(|kept| !kept.is_expired());
                    if kept.is_none() {
                        // Never seen with this entry: started once to fill its catalog.
                        to_connect.push((name.clone(), server.clone()));
                    }
                }
                Ok(server) => to_connect.push((name.clone(), server.clone())),
                Err(e) => {
                    tracing::warn!(target: STATUS_LOG, server = %name, "skipping the server: {e}")
                }
            }
            let mut slot = Slot::new(entry).with_start(start);
            if let Some(kept) = kept {
                slot.idle_with(kept);
            }
            if let Some(Ok(filter)) = config.tool_filter(&name) {
                slot.tools.set_filter(filter);
            }
            if !enabled {
                slot = slot.disabled();
            }
            slots.insert(name, slot);
        }
        let tool_search = options.tool_search.or_else(|| {
            config.tool_search().unwrap_or_else(|e| {
                tracing::warn!("tool search stays off: {e}");
                None
            })
        });
        let servers = Servers {
            registered: Registered::new(tool_search),
            options,
            gate,
            config,
            slots: Mutex::new(slots),
            watching: AtomicBool::new(false),
            locks: ServerLocks::default(),
            closing: tokio::sync::watch::Sender::new(false),
            catalogs,
            stopping_idle: AtomicBool::new(false),
            saves: Mutex::default(),
        };
        (servers, to_connect)
    }

    /// Connects server `name` (its lock held by the caller), lists its tools and records the
    /// outcome ([`Servers::settle`]).
    pub(super) async fn connect(
        self: &Arc<Self>,
        name: &str,
        config: ServerConfig,
    ) -> Result<Arc<Client>> {
        let closing = self.closing.subscribe();
        let result = connect_and_list(name.to_string(), config, &self.options, closing).await;
        let settled = self.settle(name, result).await;
        if let Ok(client) = &settled {
            self.keep_catalog(name, client);
        }
        settled
    }

    /// Keeps the catalog of on-demand server `name` as its client `client` listed it, for
    /// the next launch: expiring with the tool list's `ttlMs` where the server gave one, and
    /// not kept (the old one forgotten) where the list is private to the login it was read
    /// with (`cacheScope` not `public` under an access token). Written in the background.
    pub(super) fn keep_catalog(&self, name: &str, client: &Arc<Client>) {
        let (kept, key) = {
            let slots = self.slots();
            let Some(slot) = slots.get(name) else {
                return;
            };
            let Ok(config) = slot.config() else {
                return;
            };
            if !slot.start().is_on_demand() || !slot.is_current(client) {
                return;
            }
            (slot.kept_catalog(), catalog_key(config))
        };
        let kept = match client.tool_list_keeping() {
            ListKeeping::PrivateToLogin => None,
            ListKeeping::For(ttl) => Some(kept.with_ttl(ttl)),
            _ => Some(kept),
        };
        // On a thread of its own: the store (an embedder's, or files) is never run under a
        // connect lock nor on the runtime's threads.
        let (store, name) = (self.catalogs.clone(), name.to_string());
        let saving = tokio::task::spawn_blocking(move || match kept {
            Some(kept) => store.save(&name, &key, &kept),
            None => store.forget(&name),
        });
        let mut saves = self.saves.lock().expect("saves lock");
        saves.retain(|s| !s.is_finished());
        saves.push(saving);
    }

    /// Forgets the catalog kept of server `name`.
    pub(super) fn forget_catalog(&self, name: &str) {
        self.catalogs.forget(name)
    }

    /// Whether [`Servers::close`] has started.
    fn is_closing(&self) -> bool {
        *self.closing.borrow()
    }

    /// Starts the task that stops idle on-demand servers, unless it runs (or no server is
    /// on demand). Within a tokio runtime.
    pub(super) fn stop_idle_servers(self: &Arc<Self>) {
        let on_demand = self.slots().values().any(|s| s.start().is_on_demand());
        if on_demand && !self.stopping_idle.swap(true, Ordering::SeqCst) {
            tokio::spawn(stop_idle_servers(Arc::downgrade(self)));
        }
    }

    /// How long the idle-stopping task waits between looks: see [`on_demand::check_interval`].
    fn idle_check_interval(&self) -> std::time::Duration {
        let shortest = self
            .slots()
            .values()
            .filter_map(|s| match s.start() {
                Start::OnDemand { idle_timeout } => Some(idle_timeout),
                _ => None,
            })
            .min()
            .unwrap_or(crate::host::DEFAULT_IDLE_TIMEOUT);
        on_demand::check_interval(shortest)
    }

    /// Stops every on-demand server that is idle past its timeout (`fill`: any that is not
    /// in use, as after the connect that filled its catalog), telling the event stream.
    pub(super) async fn stop_idle(&self, only: Option<&str>, fill: bool) {
        let stopped: Vec<(String, Arc<Client>)> = {
            let mut slots = self.slots();
            slots
                .iter_mut()
                .filter(|(name, _)| only.is_none_or(|o| o == name.as_str()))
                .filter_map(|(name, slot)| Some((name.clone(), slot.stop_if_idle(fill)?)))
                .collect()
        };
        if stopped.is_empty() {
            return;
        }
        for (name, _) in &stopped {
            tracing::info!(server = %name, "stopped: idle");
            self.publish_state(name, Some(ServerState::Idle), None);
        }
        for (_, client) in stopped {
            client.close().await;
        }
        give_back_freed_memory();
    }

    /// A request through server `name` begins (an on-demand server is not stopped while it
    /// is in flight); `None` if there is no such server.
    pub(super) fn in_use(&self, name: &str) -> Option<InUse> {
        self.slots().get(name).map(|slot| slot.activity.begin())
    }

    /// Takes `name` for a new server of `config`, `connecting`; false if the name is taken.
    pub(super) fn insert(&self, name: &str, config: ServerConfig) -> bool {
        let mut slots = self.slots();
        if slots.contains_key(name) {
            return false;
        }
        slots.insert(name.to_string(), Slot::new(Ok(config)));
        true
    }

    pub(super) fn slots(&self) -> MutexGuard<'_, BTreeMap<String, Slot>> {
        self.slots.lock().expect("slots lock")
    }

    /// Records the outcome of connecting `name`, registers its tools (once registering is on:
    /// [`Manager::new`](crate::host::Manager::new) registers all at the end) and starts its
    /// watcher (once watching is on).
    fn apply_connect(self: &Arc<Self>, name: &str, result: Result<Connected>) {
        let mut slots = self.slots();
        let Some(slot) = slots.get_mut(name) else {
            return;
        };
        if !slot.connected(name, result, *self.closing.borrow()) {
            return;
        }
        self.publish_state(name, Some(slot.state()), slot.last_error());
        if self.registered.is_on() {
            self.register_slot(name, slot);
        }
        if self.watching.load(Ordering::SeqCst) {
            self.start_watcher(name, slot);
        }
    }

    /// [`Slot::login_seen`] for server `name`, told to the event stream when its state
    /// changed.
    pub(super) fn login_seen(&self, name: &str, client: &Arc<Client>, lost: Option<&Error>) {
        let mut slots = self.slots();
        if let Some(slot) = slots.get_mut(name)
            && slot.login_seen(client, lost)
        {
            self.publish_state(name, Some(slot.state()), slot.last_error());
        }
    }

    pub(super) fn publish_state(
        &self,
        name: &str,
        state: Option<ServerState>,
        error: Option<String>,
    ) {
        let server = name.to_string();
        let event = Event::State {
            server,
            state,
            error,
        };
        self.options.events.publish(event);
    }

    pub(super) fn register_slot(&self, name: &str, slot: &Slot) -> Vec<Collision> {
        self.registered
            .register(name, slot.registrable().as_deref())
    }

    /// Registers every connected server's tools again, in name order (see
    /// [`Manager::register_all`](crate::host::Manager::register_all)).
    pub(super) fn register_all(&self) -> Vec<Collision> {
        self.registered.turn_on();
        let slots = self.slots();
        *self.registered.write() = Registry::new();
        slots
            .iter()
            .flat_map(|(name, slot)| self.register_slot(name, slot))
            .collect()
    }

    /// Follows every connected server from now on (see
    /// [`Manager::watch`](crate::host::Manager::watch)).
    pub(super) fn watch(self: &Arc<Self>) {
        self.watching.store(true, Ordering::SeqCst);
        let mut slots = self.slots();
        for (name, slot) in slots.iter_mut() {
            self.start_watcher(name, slot);
        }
    }

    fn start_watcher(self: &Arc<Self>, name: &str, slot: &mut Slot) {
        let options = &self.options;
        let follow = Following {
            debounce: options.debounce,
            poll: Some(options.poll_interval),
            events: options.events.clone(),
            subscriptions: slot.catalog.listening(),
            reread: self.reread(),
        };
        slot.watch(name, follow);
    }

    /// What a watcher calls on a change: holds the manager weakly, so that a watcher never
    /// keeps it alive.
    fn reread(self: &Arc<Self>) -> Reread {
        let servers = Arc::downgrade(self);
        Arc::new(move |name, client, changes| {
            let servers = servers.clone();
            Box::pin(async move {
                let Some(servers) = servers.upgrade() else {
                    return false;
                };
                servers.reread_lists(&name, &client, changes).await;
                true
            })
        })
    }

    /// Lists what changed of server `name` again and records it, telling the event stream.
    async fn reread_lists(self: &Arc<Self>, name: &str, client: &Arc<Client>, changes: Changes) {
        if changes.tools {
            let result = client.list_tools().await;
            if let Ok(count) = self.apply_refresh(name, client, result) {
                self.publish_list(name, "tools", count);
            }
        }
        if changes.resources {
            self.refresh_list(name, client, List::Resources).await;
        }
        if changes.prompts {
            self.refresh_list(name, client, List::Prompts).await;
        }
        self.keep_catalog(name, client);
    }

    /// Records a fresh tool list of `client` (if it is still the server's client).
    pub(super) fn apply_refresh(
        &self,
        name: &str,
        client: &Arc<Client>,
        result: Result<Vec<Tool>>,
    ) -> Result<usize> {
        let mut slots = self.slots();
        let slot = slots.get_mut(name).ok_or_else(|| not_connected(name))?;
        let count = slot.refresh_tools(name, client, result)?;
        if self.registered.is_on() {
            self.register_slot(name, slot);
        }
        Ok(count)
    }

    /// Lists a server's resources or prompts again and records them (what the watcher does
    /// on a `list_changed`), telling the event stream.
    async fn refresh_list(self: &Arc<Self>, name: &str, client: &Arc<Client>, list: List) {
        let fresh = list_of(name, client, list).await;
        let (label, count) = {
            let mut slots = self.slots();
            match slots.get_mut(name) {
                Some(slot) if slot.is_current(client) => slot.catalog.refresh(list, fresh),
                _ => return,
            }
        };
        tracing::info!(server = %name, count, "{label} list refreshed");
        self.publish_list(name, label, count);
    }

    fn publish_list(&self, name: &str, list: &'static str, count: usize) {
        let server = name.to_string();
        let event = Event::ListChanged {
            server,
            list,
            count,
        };
        self.options.events.publish(event);
    }

    /// Closes every server for good (see [`Manager::close`](crate::host::Manager::close)).
    pub(super) async fn close(&self) {
        self.closing.send_replace(true);
        let clients: Vec<Arc<Client>> = self.slots().values_mut().filter_map(Slot::close).collect();
        *self.registered.write() = Registry::new();
        let mut closing = tokio::task::JoinSet::new();
        for client in clients {
            closing.spawn(async move { client.close().await });
        }
        // Connects in flight hold their server's lock until their transport is closed.
        for lock in self.locks.all() {
            closing.spawn(async move {
                let _ = lock.lock().await;
            });
        }
        while closing.join_next().await.is_some() {}
        // The catalogs being kept are written before the manager is done (a store that
        // hangs is waited for a while only).
        let saves = std::mem::take(&mut *self.saves.lock().expect("saves lock"));
        let written = async {
            for save in saves {
                let _ = save.await;
            }
        };
        let _ = tokio::time::timeout(SAVE_DEADLINE, written).await;
    }

    /// The client of a server, if it is connected.
    pub(super) fn client(&self, name: &str) -> Option<Arc<Client>> {
        self.slots().get(name).and_then(|s| s.client().cloned())
    }

    /// Every server's status, sorted by name.
    pub(super) fn status(&self) -> Vec<ServerStatus> {
        let defaults = &self.options.client;
        let slots = self.slots();
        slots.iter().map(|(n, s)| s.status(n, defaults)).collect()
    }

    pub(super) fn server_status(&self, name: &str) -> Option<ServerStatus> {
        let defaults = &self.options.client;
        self.slots().get(name).map(|s| s.status(name, defaults))
    }

    /// The host tools' definitions: the resource tools when any server offering its lists
    /// (connected, or on demand) has resources or templates, the skill tool when any has
    /// skills.
    pub(super) fn host_tool_definitions(&self) -> Vec<ToolDefinition> {
        let slots = self.slots();
        let offered = || slots.iter().filter(|(_, s)| s.offers_lists());
        let with_resources: Vec<String> = offered()
            .filter(|(_, s)| s.catalog.has_resources())
            .map(|(name, _)| name.clone())
            .collect();
        let with_skills: Vec<(&str, &[Skill])> = offered()
            .filter(|(_, s)| !s.catalog.lists().skills.is_empty())
            .map(|(name, s)| (name.as_str(), s.catalog.lists().skills.as_slice()))
            .collect();
        let skill_tool = catalog::skill_tool_definition(&with_skills);
        drop(slots);
        let mut definitions = catalog::resource_tool_definitions(with_resources);
        definitions.extend(skill_tool);
        definitions
    }

    /// Takes server `name` out of the slots and the registry; its client, to close; `None`
    /// if there is no such server.
    pub(super) fn detach(&self, name: &str) -> Option<Option<Arc<Client>>> {
        let mut slots = self.slots();
        let slot = slots.remove(name)?;
        // Servers whose tools lost a name to this one get it now.
        let blocked: BTreeSet<String> = {
            let mut registry = self.registered.write();
            registry.remove_server(name);
            let collisions = registry.collisions().into_iter();
            let lost = collisions.filter(|c| c.kept.0 == name);
            lost.map(|c| c.dropped.0).collect()
        };
        if self.registered.is_on() {
            for other in &blocked {
                if let Some(other_slot) = slots.get(other) {
                    self.register_slot(other, other_slot);
                }
            }
        }
        tracing::info!(server = %name, "removed");
        self.publish_state(name, None, None);
        Some(slot.into_client())
    }

    /// Closes a detached server's client and waits out a connect of its name in flight
    /// (which closes what it made, finding its slot gone).
    pub(super) async fn close_detached(&self, name: &str, client: Option<Arc<Client>>) {
        if let Some(client) = client {
            client.close().await;
        }
        let lock = self.locks.of(name);
        drop(lock.lock().await);
        drop(lock);
        self.locks.forget(name, || !self.slots().contains_key(name));
        give_back_freed_memory();
    }

    /// The server's live client, reconnecting once if its session ended (or starting it,
    /// on demand), and the request's hold on it: an on-demand server is not stopped while
    /// the hold is kept.
    pub(super) async fn live_client(
        self: &Arc<Self>,
        server: &str,
        method: &str,
    ) -> Result<(Arc<Client>, InUse)> {
        let Some(in_use) = self.in_use(server) else {
            return Err(no_such_server(server).during(method));
        };
        let client = match self.client(server) {
            Some(c) if !c.is_closed() => c,
            stale => self.reconnect_after(server, stale.as_ref()).await?,
        };
        Ok((client, in_use))
    }

    /// Reconnects server `name`, its lock held by the caller: the old client closed, a new
    /// one connected and its tools registered.
    pub(super) async fn reconnect_locked(self: &Arc<Self>, name: &str) -> Result<Arc<Client>> {
        let (config, old) = match self.slots().get_mut(name) {
            Some(slot) => slot.begin_reconnect(name)?,
            None => return Err(Error::new(name, ErrorKind::UnknownServer)),
        };
        if let Some(old) = old {
            old.close().await;
        }
        let settled = self.connect(name, config).await;
        // The old client's lists are gone now.
        give_back_freed_memory();
        settled
    }

    /// Records the outcome of connecting `name` ([`Servers::apply_connect`]). A client made
    /// while the server was removed or the manager closed is not kept: it is closed here,
    /// before the server's lock is let go.
    async fn settle(
        self: &Arc<Self>,
        name: &str,
        result: Result<Connected>,
    ) -> Result<Arc<Client>> {
        let made = result.as_ref().map(|c| c.client.clone());
        let made = made.map_err(Clone::clone);
        self.apply_connect(name, result);
        let made = made?;
        if self.client(name).is_some_and(|c| Arc::ptr_eq(&c, &made)) {
            return Ok(made);
        }
        made.close().await;
        let why = "it was removed, or the manager closed, while it connected";
        Err(Error::new(name, ErrorKind::Closed(why.into())))
    }

    /// Reconnects `server` unless someone else already replaced `stale` with a live client.
    pub(super) async fn reconnect_after(
        self: &Arc<Self>,
        server: &str,
        stale: Option<&Arc<Client>>,
    ) -> Result<Arc<Client>> {
        let lock = self.locks.of(server);
        let _held = lock.lock().await;
        if let Some(current) = self.client(server) {
            let replaced = stale.is_none_or(|s| !Arc::ptr_eq(s, &current));
            if replaced && !current.is_closed() {
                return Ok(current);
            }
        }
        self.reconnect_locked(server).await
    }

    /// The search index of the registered tools now.
    pub(super) fn tool_index(&self) -> Arc<ToolIndex> {
        let registered = &self.registered;
        registered.index(|| {
            let slots = self.slots();
            registered.of(slots.iter().map(|(name, slot)| (name, slot.tools.all())))
        })
    }
}

/// Stops each on-demand server left idle past its timeout, looking every
/// [`Servers::idle_check_interval`], until the manager is gone or closed. Holds the manager
/// weakly between looks: it never keeps it alive.
async fn stop_idle_servers(servers: std::sync::Weak<Servers>) {
    loop {
        let interval = match servers.upgrade() {
            Some(servers) if !servers.is_closing() => servers.idle_check_interval(),
            _ => return,
        };
        tokio::time::sleep(interval).await;
        let Some(servers) = servers.upgrade() else {
            return;
        };
        servers.stop_idle(None, false).await;
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
