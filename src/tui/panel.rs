//! [`Panel`]: the state machine wired to a [`Control`]: keys become background jobs, whose
//! results come back over a channel and are applied at the next [`Panel::tick`].

use super::app::{App, OAuthInfo, Snapshot, ToolRow, Update};
use super::catalog::CatalogView;
use super::effect::{Effect, Job};
use super::form::Asking;
use super::view;
use crate::host::config::ServerConfig;
use crate::host::control::{Control, ControlError, LoginEvent, LoginOptions};
use crate::host::gate::Allowlist;
use crate::host::manager::ServerState;
use crate::host::{EVENT_QUEUE, PendingRequests, PermissionMode, Start, ToolCall};
use crossterm::event::{Event, KeyEvent, KeyEventKind};
use ratatui::Frame;
use ratatui::layout::Rect;
use std::collections::HashMap;
use std::time::Duration;
use tokio::sync::broadcast::{self, error::RecvError, error::TryRecvError};
use tokio::sync::mpsc;
use tokio::task::AbortHandle;

/// What the host of the panel does next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    /// Keep showing the panel.
    Continue,
    /// The user left the panel (`q` on the list, or Ctrl-C).
    Quit,
}

/// How many background results wait to be applied at most (a job waits to send more).
const UPDATES: usize = 64;
/// How many allowlist changes wait to be saved at most (more are refused, with a notice).
const ALLOW_CHANGES: usize = 16;

/// An allowlist change, saved in the order the keys came.
enum AllowChange {
    Tool(String),
    Server(String),
    /// Shows or hides a tool (or, `None`, every tool) of a server.
    Visible(String, Option<String>, bool),
    /// Enables or disables a server.
    Enabled(String, bool),
    /// Makes a server run on demand or from launch.
    Start(String, Start),
}

/// The `/mcp` panel over one [`Control`]: feed it keys ([`Panel::handle_event`]), call
/// [`Panel::tick`] now and then (a few times a second: it applies background results,
/// reads the files and the manager again, and turns the spinner) and draw it
/// ([`Panel::draw`]). Connecting, reconnecting, saving and logging in run on tasks of their
/// own, so no key waits for them.
pub struct Panel {
    app: App,
    control: Control,
    updates_tx: mpsc::Sender<Update>,
    updates: mpsc::Receiver<Update>,
    allow_tx: mpsc::Sender<AllowChange>,
    /// Allowlist changes sent and not yet answered.
    allow_pending: usize,
    /// The tasks that follow logins in progress, by server; aborting one cancels its login.
    logins: HashMap<String, AbortHandle>,
    login_options: LoginOptions,
    /// The manager's events, from the panel's start (a board declines at once when no one
    /// listens); `false` once the stream closed.
    events: broadcast::Receiver<crate::host::Event>,
    events_open: bool,
    /// The board whose requests the panel answers, if any ([`Panel::answering`]).
    requests: Option<PendingRequests>,
}

impl std::fmt::Debug for Panel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Panel")
            .field("control", &self.control)
            .finish_non_exhaustive()
    }
}

/// What the panel shows, read from the manager and the files now: with the catalog of
/// `catalog_of`, the server whose screen is open.
fn snapshot(control: &Control, catalog_of: Option<&str>) -> Snapshot {
    let control = &control;
    let servers = control.status();
    let mut tools: Vec<ToolRow> = servers
        .iter()
        .flat_map(|s| {
            control
                .server_tools(&s.name)
                .unwrap_or_default()
                .into_iter()
                .map(|t| ToolRow {
                    name: t.name,
                    server: s.name.clone(),
                    tool: t.tool,
                    description: t.description,
                    visible: t.visible,
                    ui: t.ui.map(|ui| ui.resource_uri),
                })
        })
        .collect();
    tools.sort_by(|a, b| a.name.cmp(&b.name));
    let instructions = servers
        .iter()
        .filter(|s| s.has_instructions)
        .filter_map(|s| {
            let text = control.server_instructions(&s.name)?;
            Some((s.name.clone(), text))
        })
        .collect();
    let mut problems = Vec::new();
    let allowlist = control.allowlist().unwrap_or_else(|e| {
        problems.push(e.to_string());
        Allowlist::default()
    });
    let (configured, oauth) = match control.config() {
        Ok(config) => {
            let oauth = config
                .servers()
                .into_iter()
                .filter_map(|(name, entry)| match entry {
                    Ok(ServerConfig::Http(h)) if h.auth.as_deref() == Some("oauth") => Some((
                        name,
                        OAuthInfo {
                            client_id: h.oauth_client_id,
                            redirect_uri: h.oauth_redirect_uri,
                        },
                    )),
                    _ => None,
                })
                .collect();
            (config.server_names().into_iter().collect(), oauth)
        }
        Err(e) => {
            problems.push(e.to_string());
            Default::default()
        }
    };
    let catalog = catalog_of.and_then(|server| {
        Some(CatalogView {
            server: server.to_string(),
            catalog: control.catalog(server)?,
            completions: control
                .client(server)
                .is_some_and(|c| c.details().has_capability("completions")),
        })
    });
    Snapshot {
        servers,
        tools,
        allowlist,
        configured,
        oauth,
        instructions,
        catalog,
        problem: (!problems.is_empty()).then(|| problems.join("; ")),
    }
}

/// How to log in to `server` from the panel: what it adds to an error that needs a login.
fn login_advice(server: &str) -> String {
    format!("log in: open {server} in the list and press l")
}

/// How an added server's first connect went, for the status line.
fn connected(name: &str, status: crate::host::ServerStatus) -> Result<String, String> {
    match status.state {
        ServerState::Connected => Ok(format!("{name} connected: {} tools", status.tool_count)),
        ServerState::NeedsLogin => Ok(format!("{name} needs a login; {}", login_advice(name))),
        state => Err(format!(
            "{name} {state}: {}",
            status.last_error.unwrap_or_default()
        )),
    }
}

impl Panel {
    /// A panel over `control`, showing the list of servers. Must be called within a tokio
    /// runtime (its background jobs run there).
    pub fn new(control: Control) -> Panel {
        let (updates_tx, updates) = mpsc::channel(UPDATES);
        let (allow_tx, mut allow_rx) = mpsc::channel::<AllowChange>(ALLOW_CHANGES);
        let (worker, results) = (control.clone(), updates_tx.clone());
        // One worker saves allowlist changes, so they land in the order of the keys.
        tokio::spawn(async move {
            while let Some(change) = allow_rx.recv().await {
                let update = match change {
                    AllowChange::Tool(name) => Update::Allowlist(
                        worker.toggle_tool(&name).await.map_err(|e| e.to_string()),
                    ),
                    AllowChange::Server(server) => Update::Allowlist(
                        worker
                            .toggle_server(&server)
                            .await
                            .map_err(|e| e.to_string()),
                    ),
                    AllowChange::Visible(server, tool, visible) => {
                        let what = tool.clone().unwrap_or_else(|| "every tool".into());
                        let shown = if visible { "shown to" } else { "hidden from" };
                        Update::Visibility(
                            worker
                                .set_tool_visible(&server, tool.as_deref(), visible)
                                .await
                                .map(|_| format!("{server}: {what} {shown} the model"))
                                .map_err(|e| e.to_string()),
                        )
                    }
                    AllowChange::Start(server, start) => Update::Visibility(
                        worker
                            .set_start(&server, start)
                            .await
                            .map(|()| match start {
                                Start::OnDemand { idle_timeout } => format!(
                                    "{server} now starts on demand (stopped after {} s idle)",
                                    idle_timeout.as_secs_f64()
                                ),
                                _ => format!("{server} now runs from launch"),
                            })
                            .map_err(|e| e.to_string()),
                    ),
                    AllowChange::Enabled(server, enabled) => Update::Visibility(
                        worker
                            .set_enabled(&server, enabled)
                            .await
                            .map(|()| {
                                let now = if enabled { "enabled" } else { "disabled" };
                                format!("{server} {now}")
                            })
                            .map_err(|e| e.to_string()),
                    ),
                };
                if results.send(update).await.is_err() {
                    break;
                }
            }
        });
        let app = App::new(snapshot(&control, None));
        let events = control.events();
        Panel {
            app,
            control,
            updates_tx,
            updates,
            allow_tx,
            allow_pending: 0,
            logins: HashMap::new(),
            login_options: LoginOptions::default(),
            events,
            events_open: true,
            requests: None,
        }
    }

    /// Answers the elicitation and sampling requests waiting on `board` (which must publish
    /// on the manager's event bus, [`ManagerOptions::events`]): each opens over whatever
    /// screen shows, a form to fill in, a URL to open after `y`, or a sampling request to
    /// review and decline (the panel has no model). Requests already waiting are shown at
    /// once.
    ///
    /// [`ManagerOptions::events`]: crate::host::ManagerOptions::events
    pub fn answering(mut self, board: PendingRequests) -> Panel {
        self.requests = Some(board);
        self.resync();
        self
    }

    /// Whether a login opens the system browser (it does by default; the URL is always
    /// shown).
    pub fn open_browser(mut self, open: bool) -> Panel {
        self.login_options.open_browser = open;
        self
    }

    /// The control the panel drives.
    pub fn control(&self) -> &Control {
        &self.control
    }

    /// A terminal event: keys go to the screen, pasted text to the field being edited
    /// (with bracketed paste on); a resize needs only a redraw.
    pub fn handle_event(&mut self, event: &Event) -> Flow {
        match event {
            Event::Key(key) => self.handle_key(*key),
            Event::Paste(text) => {
                self.app.handle_paste(text);
                Flow::Continue
            }
            _ => Flow::Continue,
        }
    }

    /// A key press (releases and repeats of other kinds are ignored).
    pub fn handle_key(&mut self, key: KeyEvent) -> Flow {
        if key.kind == KeyEventKind::Release {
            return Flow::Continue;
        }
        for effect in self.app.handle_key(key) {
            self.run(effect);
        }
        if self.app.quit {
            Flow::Quit
        } else {
            Flow::Continue
        }
    }

    /// Applies every background result that has come, reads the manager and the files
    /// again, and turns the spinner.
    pub fn tick(&mut self) {
        while let Ok(update) = self.updates.try_recv() {
            self.apply(update);
        }
        // As many as the stream holds, so a flood of events cannot hold the panel here.
        for _ in 0..EVENT_QUEUE {
            match self.events.try_recv() {
                Ok(event) => {
                    self.take_event(Ok(event));
                }
                Err(TryRecvError::Lagged(n)) => {
                    self.take_event(Err(RecvError::Lagged(n)));
                }
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Closed) => {
                    self.events_open = false;
                    break;
                }
            }
        }
        let catalog_of = self.app.catalog_server().map(str::to_string);
        self.app
            .refresh(snapshot(&self.control, catalog_of.as_deref()));
        self.app.frame = self.app.frame.wrapping_add(1);
    }

    /// Waits for the next background result, or an event that changes what is shown (a
    /// server's request, a list or state change), and applies it (cancel-safe: use it in a
    /// `select!` beside the terminal's events, then draw).
    pub async fn changed(&mut self) {
        loop {
            tokio::select! {
                update = self.updates.recv() => {
                    if let Some(update) = update {
                        self.apply(update);
                    }
                    return;
                }
                event = self.events.recv(), if self.events_open => {
                    if self.take_event(event) {
                        return;
                    }
                }
            }
        }
    }

    /// Takes one event of the manager's stream; whether it changes what is shown.
    fn take_event(&mut self, event: Result<crate::host::Event, RecvError>) -> bool {
        use crate::host::Event as E;
        match event {
            Ok(E::Request { id, .. }) => {
                let Some(waiting) = self.requests.as_ref().and_then(|b| b.get(&id)) else {
                    return false;
                };
                self.apply(Update::Asked(Box::new(Asking::new(&waiting))));
            }
            Ok(E::RequestEnded { id, reason, .. }) => {
                self.apply(Update::RequestEnded { id, reason });
            }
            Ok(E::State { .. } | E::ListChanged { .. }) => {}
            Ok(_) => return false,
            // Some events were lost: whatever waits now is on the board.
            Err(RecvError::Lagged(_)) => self.resync(),
            Err(RecvError::Closed) => self.events_open = false,
        }
        true
    }

    /// Shows every request waiting on the board now.
    fn resync(&mut self) {
        if let Some(board) = &self.requests {
            let waiting = board.waiting().iter().map(Asking::new).collect();
            self.apply(Update::Waiting(waiting));
        }
    }

    /// Waits until no background work is in flight (no server connecting, no job, no
    /// allowlist change unsaved; a login waiting for its browser counts as work), at most
    /// `limit`, applying results as they come; then [`Panel::tick`]s. Returns whether it is
    /// all done.
    pub async fn settle(&mut self, limit: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + limit;
        while !self.is_idle() && tokio::time::Instant::now() < deadline {
            // Connects the manager started send no result: look again now and then.
            let _ = tokio::time::timeout(Duration::from_millis(50), self.changed()).await;
        }
        self.tick();
        self.is_idle()
    }

    /// Whether no background work is in flight (see [`Panel::settle`]).
    pub fn is_idle(&self) -> bool {
        self.app.jobs.is_empty()
            && self.app.fetches.fetching == 0
            && !self.app.fetches.completing
            && self.allow_pending == 0
            && !self
                .control
                .status()
                .iter()
                .any(|s| s.state == ServerState::Connecting)
    }

    /// Draws the panel into `area` of `frame` (the whole frame: `frame.area()`).
    pub fn draw(&self, frame: &mut Frame, area: Rect) {
        view::draw(&self.app, frame, area);
    }

    fn apply(&mut self, update: Update) {
        match &update {
            Update::Allowlist(_) | Update::Visibility(_) => {
                self.allow_pending = self.allow_pending.saturating_sub(1)
            }
            Update::LoginDone(name, _) => {
                self.logins.remove(name);
            }
            _ => {}
        }
        for effect in self.app.apply(update) {
            self.run(effect);
        }
    }

    /// Sends `update` from a background job (waiting while the queue is full).
    fn spawn_job(
        &self,
        job: impl std::future::Future<Output = Option<Update>> + Send + 'static,
    ) -> AbortHandle {
        let updates = self.updates_tx.clone();
        tokio::spawn(async move {
            if let Some(update) = job.await {
                let _ = updates.send(update).await;
            }
        })
        .abort_handle()
    }

    fn run(&mut self, effect: Effect) {
        let control = self.control.clone();
        match effect {
            Effect::Quit => {}
            Effect::Add { name, server } => {
                let updates = self.updates_tx.clone();
                self.spawn_job(async move {
                    let finished = |job, outcome| Update::Finished {
                        server: name.clone(),
                        job,
                        outcome,
                    };
                    let adding = match control.begin_add_server(&name, *server).await {
                        Ok(adding) => adding,
                        Err(e) => return Some(finished(Job::Saving, Err(e.to_string()))),
                    };
                    let saved = format!(
                        "{name} saved to {}; connecting…",
                        control.config_path().display()
                    );
                    let _ = updates.send(finished(Job::Saving, Ok(saved))).await;
                    let outcome = match adding.connect().await {
                        Ok(status) => connected(&name, status),
                        Err(e) => Err(e.to_string()),
                    };
                    Some(finished(Job::Connecting, outcome))
                });
            }
            Effect::Remove(name) => {
                self.spawn_job(async move {
                    let outcome = control
                        .remove_server(&name)
                        .await
                        .map(|()| format!("{name} removed"))
                        .map_err(|e| e.to_string());
                    Some(Update::Finished {
                        server: name,
                        job: Job::Removing,
                        outcome,
                    })
                });
            }
            Effect::Reconnect(name) => {
                self.spawn_job(async move {
                    let outcome = match control.reconnect_server(&name).await {
                        Ok(()) => {
                            let status = control.status().into_iter().find(|s| s.name == name);
                            let tools = status.map_or(0, |s| s.tool_count);
                            Ok(format!("{name} reconnected: {tools} tools"))
                        }
                        Err(e) => Err(e.to_string()),
                    };
                    Some(Update::Finished {
                        server: name,
                        job: Job::Reconnecting,
                        outcome,
                    })
                });
            }
            Effect::ToggleTool(name) => self.change_allowlist(AllowChange::Tool(name)),
            Effect::ToggleServer(server) => self.change_allowlist(AllowChange::Server(server)),
            Effect::SetVisible {
                server,
                tool,
                visible,
            } => self.change_allowlist(AllowChange::Visible(server, tool, visible)),
            Effect::SetEnabled(server, enabled) => {
                self.change_allowlist(AllowChange::Enabled(server, enabled))
            }
            Effect::SetStart(server, start) => {
                self.change_allowlist(AllowChange::Start(server, start))
            }
            Effect::SetClient { name, client } => {
                self.spawn_job(async move {
                    let outcome = control
                        .set_oauth_client(&name, &client)
                        .await
                        .map_err(|e| e.to_string());
                    Some(Update::ClientSaved(name, outcome))
                });
            }
            Effect::Login(name) => {
                let mut login = match control.begin_login(&name, self.login_options.clone()) {
                    Ok(login) => login,
                    Err(e) => return self.apply(Update::LoginDone(name, Err(e.to_string()))),
                };
                let updates = self.updates_tx.clone();
                let server = name.clone();
                let follower = self.spawn_job(async move {
                    let mut note = None;
                    while let Some(event) = login.next().await {
                        let update = match event {
                            LoginEvent::Url(url) => Update::LoginUrl(server.clone(), url),
                            LoginEvent::Note(text) => {
                                note = Some(text);
                                continue;
                            }
                            LoginEvent::Done(outcome) => {
                                return Some(Update::LoginDone(
                                    server,
                                    outcome.map(|()| note).map_err(|e| e.to_string()),
                                ));
                            }
                        };
                        let _ = updates.send(update).await;
                    }
                    Some(Update::LoginDone(
                        server,
                        Err("the login ended without an outcome".into()),
                    ))
                });
                self.logins.insert(name, follower);
            }
            Effect::CancelLogin(name) => {
                if let Some(follower) = self.logins.remove(&name) {
                    // Dropping the follower's `Login` cancels the login.
                    follower.abort();
                }
                self.app.jobs.remove(&name);
            }
            Effect::ReadResource {
                ticket,
                server,
                uri,
            } => {
                self.spawn_job(async move {
                    let outcome = match control.read_resource(&server, &uri).await {
                        Ok(read) => Ok(read.text),
                        Err(e) => Err(e.to_string()),
                    };
                    Some(Update::Output { ticket, outcome })
                });
            }
            Effect::LoadSkill {
                ticket,
                server,
                uri,
            } => {
                self.spawn_job(async move {
                    let outcome = match control.load_skill(&server, &uri).await {
                        Ok((_, file)) => Ok(match file.text() {
                            Some(text) => text.to_string(),
                            None => format!("[binary: {} bytes]", file.bytes.len()),
                        }),
                        Err(e) => Err(e.to_string()),
                    };
                    Some(Update::Output { ticket, outcome })
                });
            }
            Effect::GetPrompt {
                ticket,
                server,
                prompt,
                arguments,
            } => {
                self.spawn_job(async move {
                    let got = control.get_prompt(&server, &prompt, arguments);
                    let outcome = got
                        .await
                        .map(|p| prompt_text(&p))
                        .map_err(|e| e.to_string());
                    Some(Update::Output { ticket, outcome })
                });
            }
            Effect::CallTool {
                ticket,
                name,
                arguments,
            } => {
                self.spawn_job(async move {
                    // The user sent it from the panel: that is the approval.
                    let call = ToolCall::new(name, arguments).with_mode(PermissionMode::Auto);
                    let outcome = match control.call(call).await {
                        Ok(done) if done.output.is_error => {
                            Ok(format!("The tool reported an error:\n{}", done.output.text))
                        }
                        Ok(done) => Ok(done.output.text),
                        Err(e) => Err(match e.needs_login() {
                            Some(server) => format!("{e}; {}", login_advice(server)),
                            None => e.to_string(),
                        }),
                    };
                    Some(Update::Output { ticket, outcome })
                });
            }
            Effect::Complete {
                ticket,
                server,
                reference,
                argument,
                value,
                context,
            } => {
                self.spawn_job(async move {
                    let control = &control;
                    let asked = control.complete(&server, &reference, &argument, &value, &context);
                    let outcome = asked.await.map(|c| c.values).map_err(|e| e.to_string());
                    Some(Update::Completed { ticket, outcome })
                });
            }
            Effect::Reply { id, reply, open } => {
                let Some(board) = &self.requests else {
                    return;
                };
                let outcome = board.reply(&id, reply);
                let taken = outcome.is_ok();
                self.apply(Update::Replied { id, outcome });
                if let (true, Some(url)) = (taken, open) {
                    use crate::auth::callback::{browser_command, open_browser};
                    // Only https, or http on this machine, is handed to a browser.
                    let opens = browser_command(std::env::consts::OS, &url).is_some();
                    let told = if self.login_options.open_browser && opens {
                        open_browser(&url);
                        "opened in the browser".to_string()
                    } else {
                        format!("open it yourself: {url}")
                    };
                    self.apply(Update::Told(told));
                }
            }
            Effect::Paste { name, url } => {
                self.spawn_job(async move {
                    match control.complete_login_by_paste(&name, &url).await {
                        // The login's own end says how it went.
                        Ok(()) | Err(ControlError::LoginFailed(_)) => None,
                        Err(e) => Some(Update::PasteRefused(name, e.to_string())),
                    }
                });
            }
        }
    }

    fn change_allowlist(&mut self, change: AllowChange) {
        match self.allow_tx.try_send(change) {
            Ok(()) => self.allow_pending += 1,
            Err(_) => {
                self.app.apply(Update::Allowlist(Err(
                    "too many allowlist changes at once; wait a moment".into(),
                )));
            }
        }
    }
}

/// A prompt's messages as the model sees them, each under its role.
fn prompt_text(prompt: &crate::protocol::items::PromptContents) -> String {
    let mut out = String::new();
    if let Some(description) = &prompt.description {
        out.push_str(description);
        out.push_str("\n\n");
    }
    for message in &prompt.messages {
        let text = message
            .text()
            .unwrap_or_else(|| "[a content block that is not valid]".into());
        out.push_str(&format!("[{}]\n{text}\n\n", message.role));
    }
    out
}

impl Drop for Panel {
    fn drop(&mut self) {
        // Logins in progress end with the panel.
        for (_, follower) in self.logins.drain() {
            follower.abort();
        }
    }
}
