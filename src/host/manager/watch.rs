//! Following a server's lists: the watcher task (`tools/list_changed` and the other
//! `list_changed`, polling, the stateless `subscriptions/listen`) and its handle in the
//! server's slot ([`Watcher`]). What changed is read again by the manager's [`Reread`].

use crate::client::Client;
use crate::error::{Error, ErrorKind};
use crate::host::events::{Event, EventBus, bounded};
use crate::host::status::ServerState;
use crate::transport::BoxFuture;
use crate::wire::jsonrpc::Notification;
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::broadcast;
use tokio::task::JoinHandle;

/// A server's watcher, as the manager keeps it: the subscription made before the tools were
/// listed, until the watcher task takes it, and the task.
#[derive(Default)]
pub(super) struct Watcher {
    notifications: Option<broadcast::Receiver<Notification>>,
    task: Option<AbortOnDrop>,
}

impl Watcher {
    /// Keeps the subscription of a new connection for the watcher to come.
    pub(super) fn wait_on(&mut self, notifications: broadcast::Receiver<Notification>) {
        self.task = None;
        self.notifications = Some(notifications);
    }

    /// Stops the task and drops the subscription.
    pub(super) fn stop(&mut self) {
        self.task = None;
        self.notifications = None;
    }

    pub(super) fn is_running(&self) -> bool {
        self.task.is_some()
    }

    /// Starts following server `name` on `client`, if it kept a subscription to follow with.
    /// A server that declares `tools.listChanged` is not polled.
    pub(super) fn start(&mut self, name: &str, client: &Arc<Client>, follow: Following) {
        let Some(notifications) = self.notifications.take() else {
            return;
        };
        let notifies = client
            .details()
            .capabilities
            .pointer("/tools/listChanged")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let follow = Following {
            poll: follow.poll.filter(|_| !notifies),
            ..follow
        };
        let task = watch_server(name.to_string(), client.clone(), notifications, follow);
        self.task = Some(AbortOnDrop(tokio::spawn(task)));
    }
}

/// Reads a server's changed lists again and records them: the manager's, held weakly, so it
/// answers false once the manager is gone, and the watcher ends.
pub(super) type Reread =
    Arc<dyn Fn(String, Arc<Client>, Changes) -> BoxFuture<'static, bool> + Send + Sync>;

/// The lists a burst of notifications asks to read again.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Changes {
    pub(super) tools: bool,
    pub(super) resources: bool,
    pub(super) prompts: bool,
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
            let uri = crate::safe_text::escape_controls(&uri.chars().take(200).collect::<String>())
                .into_owned();
            tracing::debug!(server = %name, "dropped an update of {uri}, which is not followed");
        }
        N::Log(log) => {
            if let Some(level) = log.level {
                events.publish(Event::Log {
                    server: name.to_string(),
                    level,
                    logger: log.logger.map(|l| l.chars().take(200).collect()),
                    data: bounded(log.data),
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
async fn watch_server(
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
        reread,
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
        if !reread(name.clone(), client.clone(), changes).await {
            return;
        }
    }
}

/// How a watcher follows its server.
pub(super) struct Following {
    pub(super) debounce: Duration,
    /// How often to list the tools of a server that does not say when they change
    /// (`tools.listChanged`).
    pub(super) poll: Option<Duration>,
    pub(super) events: EventBus,
    /// The resources followed ([`crate::host::Manager::subscribe`]).
    pub(super) subscriptions: tokio::sync::watch::Receiver<Vec<String>>,
    pub(super) reread: Reread,
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
struct AbortOnDrop(JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Keeps `subscriptions/listen` open for a stateless server, with the resources followed,
/// opening it anew when they change, or (after a pause) whenever the server or the network
/// ends it, while the session lives.
async fn listen(
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
const MAX_DEBOUNCE: Duration = Duration::from_secs(2);

/// How often a watcher checks that its session is still alive.
const LIVENESS_CHECK: Duration = Duration::from_secs(5);

async fn sleep_until_or_never(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
    }
}
