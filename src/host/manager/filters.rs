//! Filters in the Manager: a server's tools, hidden ones included, its tool filter, and a
//! server enabled or disabled at run time.

use super::*;

/// One of a server's tools as [`Manager::server_tools`] lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ServerTool {
    /// Its registered name, `mcp__<server>__<tool>` (what it is or would be registered as).
    pub name: String,
    /// Its name on its server.
    pub tool: String,
    /// Its description (trimmed; empty when it has none), the server's text.
    pub description: String,
    /// Whether the server's filter shows it to the model (registered, callable).
    pub visible: bool,
}

impl Manager {
    /// Every tool of server `name` as it last listed them, hidden ones included: each with
    /// its registered name and whether its filter lets the model see it. `None` if there is
    /// no such server.
    pub fn server_tools(&self, name: &str) -> Option<Vec<ServerTool>> {
        let slots = self.slots();
        let slot = slots.get(name)?;
        Some(
            slot.tools
                .iter()
                .map(|t| ServerTool {
                    name: crate::host::registry::llm_tool_name(name, &t.name),
                    tool: t.name.clone(),
                    description: t.description.as_deref().unwrap_or("").trim().to_string(),
                    visible: slot.filter.allows(&t.name),
                })
                .collect(),
        )
    }

    /// Server `name`'s tool filter now. `None` if there is no such server.
    pub fn tool_filter(&self, name: &str) -> Option<ToolFilter> {
        self.slots().get(name).map(|s| s.filter.clone())
    }

    /// Replaces server `name`'s tool filter and registers its tools again under it; false if
    /// there is no such server. The config file is not touched ([`Control`](crate::host::Control) saves it).
    pub fn set_tool_filter(&self, name: &str, filter: ToolFilter) -> bool {
        let mut slots = self.slots();
        let Some(slot) = slots.get_mut(name) else {
            return false;
        };
        slot.filter = filter;
        if self.inner.registered.load(Ordering::SeqCst) {
            self.register_slot(name, slot);
        }
        true
    }

    /// Disables server `name` (closed, unregistered, [`ServerState::Disabled`], not
    /// reconnected until enabled) or enables it again (connected and registered like a new
    /// server). Returns its status; `None` if there is no such server. The config file is not
    /// touched ([`Control`](crate::host::Control) saves it).
    pub async fn set_enabled(&self, name: &str, enabled: bool) -> Option<ServerStatus> {
        if enabled {
            let lock = self.reconnect_lock(name);
            let _held = lock.lock().await;
            let was_disabled = {
                let mut slots = self.slots();
                let slot = slots.get_mut(name)?;
                let was_disabled = !slot.enabled;
                slot.enabled = true;
                if was_disabled {
                    slot.state = ServerState::Connecting;
                }
                was_disabled
            };
            if was_disabled {
                let _ = self.reconnect_locked(name).await;
            }
        } else {
            let client = {
                let mut slots = self.slots();
                let slot = slots.get_mut(name)?;
                slot.enabled = false;
                slot.state = ServerState::Disabled;
                slot.last_error = None;
                slot.tools.clear();
                slot.catalog = super::Catalog::default();
                slot.notifications = None;
                if let Some(w) = slot.watcher.take() {
                    w.abort();
                }
                self.register_slot(name, slot);
                slot.client.take()
            };
            self.inner.options.events.publish(Event::State {
                server: name.to_string(),
                state: Some(ServerState::Disabled),
                error: None,
            });
            if let Some(client) = client {
                client.close().await;
            }
        }
        self.status().into_iter().find(|s| s.name == name)
    }
}
