//! Reconnecting: one reconnect of a server at a time (a lock per server), the old client
//! closed and the new one's tools registered, and a stale client replaced only once.

use super::*;

impl Manager {
    pub(super) fn reconnect_lock(&self, name: &str) -> Arc<tokio::sync::Mutex<()>> {
        self.inner
            .reconnect_locks
            .lock()
            .expect("locks lock")
            .entry(name.to_string())
            .or_default()
            .clone()
    }

    /// Closes one server's connection, connects it again, lists and re-registers its tools.
    pub async fn reconnect_server(&self, name: &str) -> Result<()> {
        let lock = self.reconnect_lock(name);
        let _held = lock.lock().await;
        self.reconnect_locked(name).await.map(drop)
    }

    pub(super) async fn reconnect_locked(&self, name: &str) -> Result<Arc<Client>> {
        let (config, old) = {
            let mut slots = self.slots();
            let slot = slots.get_mut(name).ok_or_else(|| {
                Error::new(
                    name,
                    ErrorKind::Usage(
                        "there is no server by this name in the config; see `agenvoy-mcp tools`"
                            .into(),
                    ),
                )
            })?;
            let config = slot.config.clone().map_err(|e| {
                Error::new(name, ErrorKind::Usage(format!("{e}; fix the config file")))
            })?;
            if !slot.enabled {
                return Err(Error::new(
                    name,
                    ErrorKind::Usage(
                        "the server is disabled; enable it first (POST /v1/mcp/enable, or the panel's `e`)"
                            .into(),
                    ),
                ));
            }
            if let Some(w) = slot.watcher.take() {
                w.abort();
            }
            slot.state = ServerState::Connecting;
            slot.notifications = None;
            (config, slot.client.take())
        };
        if let Some(old) = old {
            old.close().await;
        }
        let closing = self.inner.closing.subscribe();
        let result = connect_and_list(name.to_string(), config, &self.inner.options, closing).await;
        let settled = self.settle(name, result).await;
        // The old client's lists are gone now.
        give_back_freed_memory();
        settled
    }

    /// Records the outcome of connecting `name` ([`Manager::apply_connect`]). A client made
    /// while the server was removed or the manager closed is not kept: it is closed here,
    /// before the server's lock is let go.
    pub(super) async fn settle(
        &self,
        name: &str,
        result: Result<Connected>,
    ) -> Result<Arc<Client>> {
        let made = result
            .as_ref()
            .map(|c| c.client.clone())
            .map_err(Clone::clone);
        self.apply_connect(name, result);
        let made = made?;
        if self
            .client(name)
            .is_some_and(|placed| Arc::ptr_eq(&placed, &made))
        {
            return Ok(made);
        }
        made.close().await;
        Err(Error::new(
            name,
            ErrorKind::Closed("it was removed, or the manager closed, while it connected".into()),
        ))
    }

    /// Reconnects every server at once (failed ones included, invalid entries excepted) and
    /// returns each outcome, sorted by server name.
    pub async fn reconnect(&self) -> Vec<(String, Result<()>)> {
        let names: Vec<String> = self
            .slots()
            .iter()
            .filter(|(_, s)| s.config.is_ok() && s.enabled)
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

    /// Reconnects `server` unless someone else already replaced `stale` with a live client.
    pub(super) async fn reconnect_after(
        &self,
        server: &str,
        stale: Option<&Arc<Client>>,
    ) -> Result<Arc<Client>> {
        let lock = self.reconnect_lock(server);
        let _held = lock.lock().await;
        if let Some(current) = self.client(server) {
            let replaced = stale.is_none_or(|s| !Arc::ptr_eq(s, &current));
            if replaced && !current.is_closed() {
                return Ok(current);
            }
        }
        self.reconnect_locked(server).await
    }
}
