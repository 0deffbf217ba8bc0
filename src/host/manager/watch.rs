//! Following a server's tools: the watcher task (`tools/list_changed`, polling, the
//! stateless `subscriptions/listen`), and a fresh list recorded and registered.

use super::*;
use crate::host::events::{Event, EventBus};

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

/// The lists a burst of notifications asks to read again.
#[derive(Debug, Clone, Copy, Default)]
struct Changes {
    tools: bool,
    resources: bool,
    prompts: bool,
}

impl Changes {
    const ALL: Changes = Changes {
        tools: true,
        resources: true,
        prompts: true,
    };

    fn any(self) -> bool {
        self.tools || self.resources || self.prompts
    }

    fn add(&mut self, other: Changes) {
        self.tools |= other.tools;
        self.resources |= other.resources;
        self.prompts |= other.prompts;
    }
}

/// What one notification asks to read again; updated resources (only those followed: a
/// server cannot fill the stream with URIs no one asked for) and log messages go to the
/// event stream at once.
fn note(
    events: &EventBus,
    name: &str,
    followed: &tokio::sync::watch::Receiver<Vec<String>>,
    notification: Notification,
) -> Changes {
    use crate::protocol::items::ServerNotification as N;
    let mut changes = Changes::default();
    match N::from_notification(notification) {
        N::ToolListChanged => changes.tools = true,
        N::ResourceListChanged => changes.resources = true,
        N::PromptListChanged => changes.prompts = true,
        N::ResourceUpdated { uri } if followed.borrow().contains(&uri) => {
            events.publish(Event::ResourceUpdated {
                server: name.to_string(),
                uri,
            })
        }
        N::ResourceUpdated { uri } => {
            let uri = crate::text::escape_controls(&uri.chars().take(200).collect::<String>())
                .into_owned();
            tracing::debug!(server = %name, "dropped an update of {uri}, which is not followed");
        }
        N::Log(log) => {
            if let Some(level) = log.level {
                events.publish(Event::Log {
                    server: name.to_string(),
                    level,
                    logger: log.logger.map(|l| l.chars().take(200).collect()),
                    data: crate::host::events::bounded(log.data),
                });
            }
        }
        _ => {}
    }
    changes
}

/// Follows one server's lists until its connection ends or the manager goes away: tools,
/// resources and prompts read again on their `list_changed` (debounced together), updated
/// resources and log messages passed on to the event stream.
pub(super) async fn watch_server(
    inner: Weak<Inner>,
    name: String,
    client: Arc<Client>,
    mut notifications: broadcast::Receiver<Notification>,
    follow: Following,
) {
    use broadcast::error::RecvError;
    let Following {
        debounce,
        poll,
        events,
        subscriptions,
    } = follow;
    let stateless = client.details().era == crate::protocol::types::Era::Stateless;
    // A stateless server tells of changes only to a client that listens for them.
    let _listener = (stateless && (poll.is_none() || client.details().has_capability("resources")))
        .then(|| {
            AbortOnDrop(tokio::spawn(listen(
                name.clone(),
                client.clone(),
                subscriptions.clone(),
            )))
        });
    if !stateless {
        // Followed resources are followed again by a new session.
        let uris = subscriptions.borrow().clone();
        for uri in uris {
            if let Err(e) = client.subscribe(&uri).await {
                tracing::warn!(server = %name, "following {uri} again failed: {e}");
            }
        }
    }
    let mut next_poll = poll.map(|p| tokio::time::Instant::now() + p);
    loop {
        let changes = tokio::select! {
            received = notifications.recv() => match received {
                Ok(n) => note(&events, &name, &subscriptions, n),
                Err(RecvError::Lagged(_)) => Changes::ALL,
                Err(RecvError::Closed) => Changes::default(),
            },
            _ = sleep_until_or_never(next_poll) => {
                next_poll = poll.map(|p| tokio::time::Instant::now() + p);
                Changes { tools: true, ..Default::default() }
            }
            // A dead session sends nothing more: stop following it (status shows it as
            // disconnected; a reconnect starts a new watcher).
            _ = tokio::time::sleep(LIVENESS_CHECK) => Changes::default(),
        };
        if client.is_closed() {
            return ended(&events, &name, &client);
        }
        if !changes.any() {
            continue;
        }
        let mut changes = changes;
        // Debounce: wait until no further change has come for `debounce`, but no longer than
        // `MAX_DEBOUNCE` from the first: a server that never stops saying its lists changed
        // gets a refresh that often, no more and no less.
        let latest = tokio::time::Instant::now() + MAX_DEBOUNCE.max(debounce);
        let mut deadline = tokio::time::Instant::now() + debounce;
        loop {
            tokio::select! {
                received = notifications.recv() => {
                    let more = match received {
                        Ok(n) => note(&events, &name, &subscriptions, n),
                        Err(RecvError::Lagged(_)) => Changes::ALL,
                        Err(RecvError::Closed) => return ended(&events, &name, &client),
                    };
                    if more.any() {
                        changes.add(more);
                        deadline = (tokio::time::Instant::now() + debounce).min(latest);
                    }
                },
                _ = tokio::time::sleep_until(deadline) => break,
            }
        }
        if client.is_closed() {
            return ended(&events, &name, &client);
        }
        let Some(manager) = inner.upgrade().map(|inner| Manager { inner }) else {
            return;
        };
        if changes.tools {
            let result = client.list_tools().await;
            if let Ok(count) = apply_refresh(&manager.inner, &name, &client, result) {
                events.publish(Event::ListChanged {
                    server: name.clone(),
                    list: "tools",
                    count,
                });
            }
        }
        if changes.resources {
            manager
                .refresh_list(&name, &client, catalog::List::Resources)
                .await;
        }
        if changes.prompts {
            manager
                .refresh_list(&name, &client, catalog::List::Prompts)
                .await;
        }
    }
}

/// How a watcher follows its server.
pub(super) struct Following {
    pub(super) debounce: Duration,
    /// How often to list the tools of a server that does not say when they change.
    pub(super) poll: Option<Duration>,
    pub(super) events: EventBus,
    /// The resources followed ([`Manager::subscribe`]).
    pub(super) subscriptions: tokio::sync::watch::Receiver<Vec<String>>,
}

/// Tells the event stream that the server's connection ended.
fn ended(events: &EventBus, name: &str, client: &Client) {
    events.publish(Event::State {
        server: name.to_string(),
        state: Some(ServerState::Disconnected),
        error: client
            .session()
            .closed_reason()
            .map(|reason| Error::new(name, ErrorKind::Closed(reason)).to_string()),
    });
}

/// Ends a task when dropped.
pub(super) struct AbortOnDrop(JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Keeps `subscriptions/listen` open for a stateless server, with the resources followed,
/// opening it anew when they change, or (after a pause) whenever the server or the network
/// ends it, while the session lives.
pub(super) async fn listen(
    name: String,
    client: Arc<Client>,
    mut subscriptions: tokio::sync::watch::Receiver<Vec<String>>,
) {
    let mut pause = Duration::from_secs(1);
    while !client.is_closed() {
        let uris = subscriptions.borrow_and_update().clone();
        let uris: Vec<&str> = uris.iter().map(String::as_str).collect();
        tokio::select! {
            ended = client.listen_for_changes(&uris) => match ended {
                Ok(_) => pause = Duration::from_secs(1),
                Err(e) => {
                    tracing::debug!(server = %name, "subscriptions/listen ended: {e}");
                    pause = (pause * 2).min(Duration::from_secs(60));
                }
            },
            // Reopened at once with the new set; an ended watch (the slot gone) ends this.
            changed = subscriptions.changed() => match changed {
                Ok(()) => continue,
                Err(_) => return,
            },
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
