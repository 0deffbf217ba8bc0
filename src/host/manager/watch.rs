//! Following a server's tools: the watcher task (`tools/list_changed`, polling, the
//! stateless `subscriptions/listen`), and a fresh list recorded and registered.

use super::*;

/// Records a fresh tool list of `client` (if it is still the server's client).
pub(super) fn apply_refresh(
    inner: &Arc<Inner>,
    name: &str,
    client: &Arc<Client>,
    result: Result<Vec<Tool>>,
) -> Result<usize> {
    let manager = Manager {
        inner: inner.clone(),
    };
    let mut slots = manager.slots();
    let Some(slot) = slots.get_mut(name) else {
        return Err(not_connected(name));
    };
    if !slot.client.as_ref().is_some_and(|c| Arc::ptr_eq(c, client)) {
        return Err(not_connected(name));
    }
    match result {
        Ok(tools) => {
            let count = tools.len();
            slot.tools = tools;
            if inner.registered.load(Ordering::SeqCst) {
                manager.register_slot(name, slot);
            }
            tracing::info!(server = %name, tools = count, "tool list refreshed");
            Ok(count)
        }
        Err(e) => {
            tracing::warn!(server = %name, "listing the tools again failed, keeping the old list: {e}");
            slot.last_error = Some(e.to_string());
            Err(e)
        }
    }
}

/// Follows one server's tool list until its connection ends or the manager goes away.
pub(super) async fn watch_server(
    inner: Weak<Inner>,
    name: String,
    client: Arc<Client>,
    mut notifications: broadcast::Receiver<Notification>,
    debounce: Duration,
    poll: Option<Duration>,
) {
    use broadcast::error::RecvError;
    // A stateless server tells of changes only to a client that listens for them.
    let _listener = (client.details().era == crate::protocol::types::Era::Stateless
        && poll.is_none())
    .then(|| AbortOnDrop(tokio::spawn(listen(name.clone(), client.clone()))));
    let mut next_poll = poll.map(|p| tokio::time::Instant::now() + p);
    loop {
        let changed = tokio::select! {
            received = notifications.recv() => match received {
                Ok(n) => n.method == methods::TOOLS_LIST_CHANGED,
                Err(RecvError::Lagged(_)) => true,
                Err(RecvError::Closed) => return,
            },
            _ = sleep_until_or_never(next_poll) => {
                next_poll = poll.map(|p| tokio::time::Instant::now() + p);
                true
            }
            // A dead session sends nothing more: stop following it (status shows it as
            // disconnected; a reconnect starts a new watcher).
            _ = tokio::time::sleep(LIVENESS_CHECK) => false,
        };
        if client.is_closed() {
            return;
        }
        if !changed {
            continue;
        }
        // Debounce: wait until no further change has come for `debounce`, but no longer than
        // `MAX_DEBOUNCE` from the first: a server that never stops saying its list changed
        // gets a refresh that often, no more and no less.
        let latest = tokio::time::Instant::now() + MAX_DEBOUNCE.max(debounce);
        let mut deadline = tokio::time::Instant::now() + debounce;
        loop {
            tokio::select! {
                received = notifications.recv() => match received {
                    Ok(n) if n.method == methods::TOOLS_LIST_CHANGED => {
                        deadline = (tokio::time::Instant::now() + debounce).min(latest);
                    }
                    Ok(_) => {}
                    Err(RecvError::Lagged(_)) => {
                        deadline = (tokio::time::Instant::now() + debounce).min(latest);
                    }
                    Err(RecvError::Closed) => return,
                },
                _ = tokio::time::sleep_until(deadline) => break,
            }
        }
        if client.is_closed() {
            return;
        }
        let result = client.list_tools().await;
        let Some(inner) = inner.upgrade() else {
            return;
        };
        let _ = apply_refresh(&inner, &name, &client, result);
    }
}

/// Ends a task when dropped.
pub(super) struct AbortOnDrop(JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Keeps `subscriptions/listen` open for a stateless server, opening it anew (after a pause)
/// whenever the server or the network ends it, while the session lives.
pub(super) async fn listen(name: String, client: Arc<Client>) {
    let mut pause = Duration::from_secs(1);
    while !client.is_closed() {
        match client.listen_for_changes(&[]).await {
            Ok(_) => pause = Duration::from_secs(1),
            Err(e) => {
                tracing::debug!(server = %name, "subscriptions/listen ended: {e}");
                pause = (pause * 2).min(Duration::from_secs(60));
            }
        }
        tokio::time::sleep(pause).await;
    }
}

/// The longest a burst of list changes holds a refresh back.
pub(super) const MAX_DEBOUNCE: Duration = Duration::from_secs(2);

/// How often a watcher checks that its session is still alive.
pub(super) const LIVENESS_CHECK: Duration = Duration::from_secs(5);

pub(super) async fn sleep_until_or_never(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
    }
}
