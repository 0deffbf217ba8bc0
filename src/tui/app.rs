//! The panel's state machine: keys in, [`Effect`]s out, [`Update`]s from the background in;
//! no I/O and no drawing, so every screen and key can be tested plainly. `App` holds the
//! list, server, tools, instructions and login screens itself, and composes the states of
//! the others: the catalog's pages ([`Fetches`]), the add [`Wizard`], the OAuth
//! [`ClientForm`] and the servers' requests ([`Requests`]), each handing back what App must
//! do rather than reaching into it.

use super::catalog::{CallForm, CatalogView, Fetches, Next, Page, Turn};
use super::effect::{Effect, Job, MAX_JOBS, Notice, TOO_MUCH};
use super::form::{Asking, Requests};
use super::input::{Input, Mask, down, key_is, up};
use super::oauth::{ClientForm, LoginState};
use super::wizard::Wizard;
use crate::host::ReplyError;
use crate::host::Start;
use crate::host::gate::Allowlist;
use crate::host::manager::{ServerState, ServerStatus};
use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use std::collections::{BTreeMap, BTreeSet};

/// One registered tool, as the tools screen lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ToolRow {
    /// `mcp__<server>__<tool>`.
    pub(crate) name: String,
    pub(crate) server: String,
    /// Its name on its server.
    pub(crate) tool: String,
    pub(crate) description: String,
    /// Whether the server's filter shows it to the model.
    pub(crate) visible: bool,
    /// The `ui://` page a host renders for its results (MCP Apps), if it names one.
    pub(crate) ui: Option<String>,
}

/// An `"auth": "oauth"` server's client settings (never its secret).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct OAuthInfo {
    pub(crate) client_id: Option<String>,
    pub(crate) redirect_uri: Option<String>,
}

/// What the panel shows, read from the manager and the files.
#[derive(Debug, Clone, Default)]
pub(crate) struct Snapshot {
    /// Every server the manager runs, by name.
    pub(crate) servers: Vec<ServerStatus>,
    /// Every registered tool, by name.
    pub(crate) tools: Vec<ToolRow>,
    pub(crate) allowlist: Allowlist,
    /// The servers of the config file.
    pub(crate) configured: BTreeSet<String>,
    /// The OAuth servers of the config file.
    pub(crate) oauth: BTreeMap<String, OAuthInfo>,
    /// Each connected server's instructions.
    pub(crate) instructions: BTreeMap<String, String>,
    /// The catalog of the server whose screen is open.
    pub(crate) catalog: Option<CatalogView>,
    /// A file that could not be read.
    pub(crate) problem: Option<String>,
}

/// What the background tells the panel.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Update {
    /// A job ended: `Ok` with what to tell, `Err` with why it failed.
    Finished {
        server: String,
        job: Job,
        outcome: Result<String, String>,
    },
    /// An allowlist change was saved (the list as it is now) or refused.
    Allowlist(Result<Allowlist, String>),
    /// A visibility change was saved (what to tell) or refused.
    Visibility(Result<String, String>),
    /// A client was saved (the redirect URI in force) or refused.
    ClientSaved(String, Result<String, String>),
    LoginUrl(String, String),
    LoginDone(String, Result<Option<String>, String>),
    /// A pasted URL was refused (the login goes on).
    PasteRefused(String, String),
    /// A read, prompt or call ended: the text to show, or why it failed.
    Output {
        ticket: u64,
        outcome: Result<String, String>,
    },
    /// Values for the argument being typed (a server that cannot complete: an error).
    Completed {
        ticket: u64,
        outcome: Result<Vec<String>, String>,
    },
    /// A server asks the user something.
    Asked(Box<Asking>),
    /// Every request waiting now (after the panel fell behind the event stream).
    Waiting(Vec<Asking>),
    /// A request ended unanswered (it expired, or the server stopped waiting).
    RequestEnded {
        id: String,
        reason: String,
    },
    /// An answer was taken, or refused.
    Replied {
        id: String,
        outcome: Result<(), ReplyError>,
    },
    /// Something to tell on the status line.
    Told(String),
}

/// A screen.
#[derive(Debug, Clone)]
pub(crate) enum Screen {
    List,
    Server(String),
    Tools {
        server: String,
        selected: usize,
    },
    Instructions {
        server: String,
        scroll: u16,
    },
    /// Resources, prompts, an arguments form, a call or an output.
    Catalog(Page),
    Add(Box<Wizard>),
    Client {
        server: String,
        form: Box<ClientForm>,
    },
    Login {
        server: String,
        url: Option<String>,
        state: LoginState,
        /// The paste field, while the user pastes.
        paste: Option<Input>,
        error: Option<String>,
    },
}

/// The panel's state.
#[derive(Debug, Clone)]
pub(crate) struct App {
    pub(crate) screen: Screen,
    pub(crate) data: Snapshot,
    /// The selected row of the list.
    pub(crate) selected: usize,
    /// A server to select in the list once the manager shows it (one just added).
    pub(crate) follow: Option<String>,
    /// The server `d` asked to delete, waiting for `y`.
    pub(crate) confirm_delete: Option<String>,
    pub(crate) jobs: BTreeMap<String, Job>,
    pub(crate) notice: Option<Notice>,
    /// Redraws so far (the spinner's frame).
    pub(crate) frame: usize,
    pub(crate) quit: bool,
    /// What servers ask; the first is shown over the screen.
    pub(crate) asked: Requests,
    /// The reads, prompts, calls and completions of the catalog's pages.
    pub(crate) fetches: Fetches,
}

impl App {
    pub(crate) fn new(data: Snapshot) -> App {
        App {
            screen: Screen::List,
            data,
            selected: 0,
            follow: None,
            confirm_delete: None,
            jobs: BTreeMap::new(),
            notice: None,
            frame: 0,
            quit: false,
            asked: Requests::default(),
            fetches: Fetches::default(),
        }
    }

    /// The server selected in the list.
    pub(crate) fn selected_server(&self) -> Option<&ServerStatus> {
        self.data.servers.get(self.selected)
    }

    pub(crate) fn status(&self, name: &str) -> Option<&ServerStatus> {
        self.data.servers.iter().find(|s| s.name == name)
    }

    pub(crate) fn tools_of(&self, server: &str) -> Vec<&ToolRow> {
        self.data
            .tools
            .iter()
            .filter(|t| t.server == server)
            .collect()
    }

    /// Takes fresh data; the list keeps its selected server where it can.
    pub(crate) fn refresh(&mut self, data: Snapshot) {
        let selected = self.selected_server().map(|s| s.name.clone());
        self.data = data;
        let follow = self
            .follow
            .take_if(|name| self.data.servers.iter().any(|s| s.name == *name));
        self.select(follow.or(selected).as_deref());
    }

    fn select(&mut self, name: Option<&str>) {
        if let Some(i) = name.and_then(|n| self.data.servers.iter().position(|s| s.name == n)) {
            self.selected = i;
        }
        self.selected = self.selected.min(self.data.servers.len().saturating_sub(1));
    }

    pub(crate) fn tell(&mut self, text: impl Into<String>) {
        self.notice = Some(Notice::tell(text));
    }

    pub(crate) fn warn(&mut self, text: impl Into<String>) {
        self.notice = Some(Notice::warn(text));
    }

    /// Shows what a part's state had to tell, if anything (else the notice stays).
    fn notify(&mut self, notice: Option<Notice>) {
        if notice.is_some() {
            self.notice = notice;
        }
    }

    /// The catalog of `server`, if it is the one the snapshot holds.
    pub(crate) fn catalog(&self, server: &str) -> Option<&CatalogView> {
        self.data.catalog.as_ref().filter(|c| c.server == server)
    }

    /// The server whose catalog the open screen shows, for the next snapshot.
    pub(crate) fn catalog_server(&self) -> Option<&str> {
        match &self.screen {
            Screen::Server(server) => Some(server),
            Screen::Catalog(page) => page.catalog_server(),
            _ => None,
        }
    }

    /// Goes where a key on a catalog page leads; what to run.
    fn turn(&mut self, turn: Turn) -> Vec<Effect> {
        match turn.next {
            Next::Stay => {}
            Next::Page(page) => self.screen = Screen::Catalog(page),
            Next::Server(server) => self.screen = Screen::Server(server),
            Next::Tools { server, selected } => self.screen = Screen::Tools { server, selected },
        }
        self.notify(turn.notice);
        turn.effects
    }

    /// Starts a job on `server` unless one is running there (or too many are).
    fn start_job(&mut self, server: &str, job: Job) -> bool {
        if let Some(running) = self.jobs.get(server) {
            self.warn(format!(
                "{server} is busy ({}); wait for it",
                running.doing()
            ));
            return false;
        }
        if self.jobs.len() >= MAX_JOBS {
            self.warn(TOO_MUCH);
            return false;
        }
        self.jobs.insert(server.to_string(), job);
        true
    }

    /// A name the wizard cannot take: in the file or in the manager.
    fn is_taken(&self, name: &str) -> bool {
        self.data.configured.contains(name) || self.status(name).is_some()
    }

    /// A key: what changes on screen, and what to do in the background.
    pub(crate) fn handle_key(&mut self, key: KeyEvent) -> Vec<Effect> {
        if key.kind == KeyEventKind::Release {
            return Vec::new();
        }
        if key.code == KeyCode::Char('c') && key.modifiers.contains(KeyModifiers::CONTROL) {
            self.quit = true;
            return vec![Effect::Quit];
        }
        self.notice = None;
        // A server's question is over the screen and takes the keys first.
        if let Some(effects) = self.asked.handle_key(key) {
            return effects;
        }
        match self.screen.clone() {
            Screen::List => self.on_list(key),
            Screen::Server(name) => self.on_server(key, name),
            Screen::Tools { server, selected } => self.on_tools(key, server, selected),
            Screen::Instructions { server, scroll } => {
                let scroll = match key.code {
                    KeyCode::Esc => {
                        self.screen = Screen::Server(server);
                        return Vec::new();
                    }
                    KeyCode::PageDown => scroll.saturating_add(10),
                    KeyCode::PageUp => scroll.saturating_sub(10),
                    _ if down(&key) => scroll.saturating_add(1),
                    _ if up(&key) => scroll.saturating_sub(1),
                    _ => scroll,
                };
                self.screen = Screen::Instructions { server, scroll };
                Vec::new()
            }
            Screen::Catalog(page) => {
                let turn = self
                    .fetches
                    .handle_key(page, key, self.data.catalog.as_ref());
                self.turn(turn)
            }
            Screen::Add(wizard) => self.on_wizard(key, wizard),
            Screen::Client { server, form } => self.on_client(key, server, form),
            Screen::Login { .. } => self.on_login(key),
        }
    }

    /// Pasted text (bracketed paste): into the field being edited, if any.
    pub(crate) fn handle_paste(&mut self, text: &str) {
        if self.asked.handle_paste(text) {
            return;
        }
        match &mut self.screen {
            Screen::Catalog(page) => page.handle_paste(text),
            Screen::Add(wizard) if !wizard.saving => wizard.input.insert(text),
            Screen::Client { form, .. } if !form.saving => form.input.insert(text),
            Screen::Login {
                paste: Some(input), ..
            } => input.insert(text),
            _ => {}
        }
    }

    fn on_list(&mut self, key: KeyEvent) -> Vec<Effect> {
        if let Some(name) = self.confirm_delete.take() {
            if key_is(&key, 'y') && self.start_job(&name, Job::Removing) {
                self.tell(format!("removing {name}…"));
                return vec![Effect::Remove(name)];
            }
            self.tell(format!("{name} is kept"));
            return Vec::new();
        }
        let count = self.data.servers.len();
        match key.code {
            _ if up(&key) => self.selected = self.selected.saturating_sub(1),
            _ if down(&key) => {
                self.selected = (self.selected + 1).min(count.saturating_sub(1));
            }
            KeyCode::Enter => {
                if let Some(s) = self.selected_server() {
                    self.screen = Screen::Server(s.name.clone());
                }
            }
            KeyCode::Char('a') => self.screen = Screen::Add(Box::new(Wizard::new())),
            KeyCode::Char('d') => match self.selected_server() {
                Some(s) => self.confirm_delete = Some(s.name.clone()),
                None => self.warn("no server to delete"),
            },
            KeyCode::Char('q') => {
                self.quit = true;
                return vec![Effect::Quit];
            }
            _ => {}
        }
        Vec::new()
    }

    fn on_server(&mut self, key: KeyEvent, name: String) -> Vec<Effect> {
        let oauth = self.data.oauth.get(&name).cloned();
        let not_oauth = |name: &str| {
            format!("{name} does not log in: set \"auth\": \"oauth\" in its entry to use OAuth")
        };
        match key.code {
            KeyCode::Esc => self.screen = Screen::List,
            KeyCode::Char('t') => {
                self.screen = Screen::Tools {
                    server: name,
                    selected: 0,
                }
            }
            KeyCode::Char('i') => {
                self.screen = Screen::Instructions {
                    server: name,
                    scroll: 0,
                }
            }
            KeyCode::Char('R') => {
                self.screen = Screen::Catalog(Page::Resources {
                    server: name,
                    selected: 0,
                })
            }
            KeyCode::Char('P') => {
                self.screen = Screen::Catalog(Page::Prompts {
                    server: name,
                    selected: 0,
                })
            }
            KeyCode::Char('S') => {
                self.screen = Screen::Catalog(Page::Skills {
                    server: name,
                    selected: 0,
                })
            }
            KeyCode::Char('e') => {
                let enable = self
                    .status(&name)
                    .is_some_and(|s| s.state == ServerState::Disabled);
                return vec![Effect::SetEnabled(name, enable)];
            }
            KeyCode::Char('o') => {
                let on_demand = self.status(&name).is_some_and(|s| s.start.is_on_demand());
                let start = if on_demand {
                    Start::Launch
                } else {
                    Start::on_demand()
                };
                return vec![Effect::SetStart(name, start)];
            }
            KeyCode::Char('r') if self.start_job(&name, Job::Reconnecting) => {
                return vec![Effect::Reconnect(name)];
            }
            KeyCode::Char('l') if oauth.is_none() => self.warn(not_oauth(&name)),
            KeyCode::Char('l') if self.start_job(&name, Job::LoggingIn) => {
                self.screen = Screen::Login {
                    server: name.clone(),
                    url: None,
                    state: LoginState::Waiting,
                    paste: None,
                    error: None,
                };
                return vec![Effect::Login(name)];
            }
            KeyCode::Char('c') => match oauth {
                None => self.warn(not_oauth(&name)),
                Some(info) => {
                    self.screen = Screen::Client {
                        server: name,
                        form: Box::new(ClientForm::new(info.client_id.as_deref())),
                    }
                }
            },
            _ => {}
        }
        Vec::new()
    }

    fn on_tools(&mut self, key: KeyEvent, server: String, selected: usize) -> Vec<Effect> {
        let tools = self.tools_of(&server);
        let count = tools.len();
        let chosen = tools.get(selected).map(|t| t.name.clone());
        let shown = tools.get(selected).map(|t| (t.tool.clone(), t.visible));
        let any_visible = tools.iter().any(|t| t.visible);
        let selected = match key.code {
            KeyCode::Esc => {
                self.screen = Screen::Server(server);
                return Vec::new();
            }
            KeyCode::Char(' ') => {
                return chosen.map(Effect::ToggleTool).into_iter().collect();
            }
            KeyCode::Char('A') => return vec![Effect::ToggleServer(server)],
            KeyCode::Enter => {
                if let Some(tool) = chosen {
                    let form = CallForm::new(server, tool, selected);
                    self.screen = Screen::Catalog(Page::Call(Box::new(form)));
                }
                return Vec::new();
            }
            KeyCode::Char('v') => {
                return shown
                    .map(|(tool, visible)| Effect::SetVisible {
                        server,
                        tool: Some(tool),
                        visible: !visible,
                    })
                    .into_iter()
                    .collect();
            }
            KeyCode::Char('V') => {
                return vec![Effect::SetVisible {
                    server,
                    tool: None,
                    visible: !any_visible,
                }];
            }
            _ if up(&key) => selected.saturating_sub(1),
            _ if down(&key) => (selected + 1).min(count.saturating_sub(1)),
            _ => selected,
        };
        self.screen = Screen::Tools { server, selected };
        Vec::new()
    }

    fn on_wizard(&mut self, key: KeyEvent, mut wizard: Box<Wizard>) -> Vec<Effect> {
        if key.code == KeyCode::Esc {
            self.screen = Screen::List;
            self.tell("nothing was added");
            return Vec::new();
        }
        let mut effects = Vec::new();
        if let Some(server) = wizard.handle_key(&key, &|name| self.is_taken(name)) {
            if self.start_job(&wizard.name, Job::Saving) {
                wizard.saving = true;
                effects.push(Effect::Add {
                    name: wizard.name.clone(),
                    server: Box::new(server),
                });
            } else {
                wizard.error = self.notice.take().map(|n| n.text);
            }
        }
        self.screen = Screen::Add(wizard);
        effects
    }

    fn on_client(
        &mut self,
        key: KeyEvent,
        server: String,
        mut form: Box<ClientForm>,
    ) -> Vec<Effect> {
        if key.code == KeyCode::Esc {
            self.screen = Screen::Server(server);
            self.tell("the client was not changed");
            return Vec::new();
        }
        let redirect = self
            .data
            .oauth
            .get(&server)
            .and_then(|o| o.redirect_uri.as_deref());
        let effects = match form.handle_key(&key, redirect) {
            Some(client) => vec![Effect::SetClient {
                name: server.clone(),
                client,
            }],
            None => Vec::new(),
        };
        self.screen = Screen::Client { server, form };
        effects
    }

    fn on_login(&mut self, key: KeyEvent) -> Vec<Effect> {
        let Screen::Login {
            server,
            state,
            paste,
            error,
            ..
        } = &mut self.screen
        else {
            return Vec::new();
        };
        let server = server.clone();
        if let Some(input) = paste {
            match key.code {
                KeyCode::Esc => *paste = None,
                KeyCode::Enter => {
                    let url = input.text().trim().to_string();
                    *paste = None;
                    *error = None;
                    return vec![Effect::Paste { name: server, url }];
                }
                _ => {
                    input.handle(&key);
                }
            }
            return Vec::new();
        }
        let waiting = *state == LoginState::Waiting;
        match key.code {
            KeyCode::Char('p') if waiting => *paste = Some(Input::new(Mask::None)),
            KeyCode::Esc | KeyCode::Enter if !waiting => self.screen = Screen::Server(server),
            KeyCode::Esc => {
                self.screen = Screen::Server(server.clone());
                self.tell(format!("the login to {server} was cancelled"));
                return vec![Effect::CancelLogin(server)];
            }
            _ => {}
        }
        Vec::new()
    }

    /// News from the background; what to do about it.
    pub(crate) fn apply(&mut self, update: Update) -> Vec<Effect> {
        let page = match &mut self.screen {
            Screen::Catalog(page) => Some(page),
            _ => None,
        };
        match update {
            Update::Output { ticket, outcome } => self.fetches.output(page, ticket, outcome),
            Update::Completed { ticket, outcome } => {
                return self.fetches.completed(page, ticket, outcome);
            }
            Update::Asked(asking) => self.asked.asked(*asking),
            Update::Waiting(all) => self.asked.replace(all),
            Update::RequestEnded { id, reason } => {
                let notice = self.asked.ended(&id, &reason);
                self.notify(notice);
            }
            Update::Replied { id, outcome } => {
                let notice = self.asked.replied(&id, outcome);
                self.notify(notice);
            }
            Update::Told(text) => self.tell(text),
            Update::Finished {
                server,
                job,
                outcome,
            } => self.finished(server, job, outcome),
            Update::Allowlist(Ok(list)) => self.data.allowlist = list,
            Update::Allowlist(Err(e)) => self.warn(e),
            Update::Visibility(Ok(told)) => self.tell(told),
            Update::Visibility(Err(e)) => self.warn(e),
            Update::ClientSaved(name, outcome) => {
                let Screen::Client { server, form } = &mut self.screen else {
                    match outcome {
                        Ok(_) => self.tell(format!("the OAuth client of {name} is saved")),
                        Err(e) => self.warn(e),
                    }
                    return Vec::new();
                };
                if *server != name {
                    return Vec::new();
                }
                match outcome {
                    Ok(redirect) => {
                        self.screen = Screen::Server(name.clone());
                        self.tell(format!(
                            "the OAuth client of {name} is saved (redirect URI {redirect}); log in with l"
                        ));
                    }
                    Err(e) => {
                        form.saving = false;
                        form.error = Some(e);
                    }
                }
            }
            Update::LoginUrl(name, new_url) => {
                if let Screen::Login { server, url, .. } = &mut self.screen
                    && *server == name
                {
                    *url = Some(new_url);
                }
            }
            Update::LoginDone(name, outcome) => {
                self.jobs.remove(&name);
                match &mut self.screen {
                    Screen::Login { server, state, .. } if *server == name => {
                        *state = LoginState::Done(outcome);
                    }
                    _ => match outcome {
                        Ok(None) => self.tell(format!("logged in to {name}")),
                        Ok(Some(note)) => self.warn(format!("logged in to {name}; {note}")),
                        Err(e) => self.warn(format!("the login to {name} failed: {e}")),
                    },
                }
            }
            Update::PasteRefused(name, why) => match &mut self.screen {
                Screen::Login { server, error, .. } if *server == name => *error = Some(why),
                _ => self.warn(why),
            },
        }
        Vec::new()
    }

    fn finished(&mut self, server: String, job: Job, outcome: Result<String, String>) {
        self.jobs.remove(&server);
        if job == Job::Saving {
            if let Screen::Add(wizard) = &mut self.screen
                && wizard.name == server
            {
                match outcome {
                    Ok(_) => {
                        self.screen = Screen::List;
                        self.data.configured.insert(server.clone());
                    }
                    Err(e) => {
                        wizard.saving = false;
                        wizard.error = Some(e);
                        return;
                    }
                }
            }
            if outcome.is_ok() {
                self.jobs.insert(server.clone(), Job::Connecting);
            }
        }
        match outcome {
            Ok(text) => {
                if job == Job::Saving {
                    self.follow = Some(server);
                }
                self.tell(text);
            }
            Err(e) => self.warn(e),
        }
    }

    /// Whether a server shows a spinner: it is connecting or a job runs on it.
    pub(crate) fn is_busy(&self, status: &ServerStatus) -> bool {
        status.state == ServerState::Connecting || self.jobs.contains_key(&status.name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::control::OAuthClient;
    use crate::tui::wizard::Step;
    use serde_json::json;

    fn key(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    fn typed(app: &mut App, text: &str) {
        for c in text.chars() {
            assert!(app.handle_key(key(KeyCode::Char(c))).is_empty());
        }
    }

    fn status(name: &str, state: ServerState) -> ServerStatus {
        ServerStatus {
            name: name.into(),
            transport: "stdio".into(),
            era: None,
            protocol_version: None,
            state,
            last_error: None,
            tool_count: 0,
            hidden_tools: 0,
            resource_count: 0,
            template_count: 0,
            prompt_count: 0,
            skill_count: 0,
            has_instructions: false,
            timeout: std::time::Duration::from_secs(60),
            startup_timeout: std::time::Duration::from_secs(60),
            proxy: None,
            start: crate::host::Start::Launch,
        }
    }

    fn app_with(names: &[&str]) -> App {
        App::new(Snapshot {
            servers: names
                .iter()
                .map(|n| status(n, ServerState::Connected))
                .collect(),
            configured: names.iter().map(|n| n.to_string()).collect(),
            ..Snapshot::default()
        })
    }

    #[test]
    fn visibility_and_enable_keys() {
        let mut app = app_with(&["fx"]);
        app.data.tools = ["echo", "env"]
            .iter()
            .map(|t| ToolRow {
                name: format!("mcp__fx__{t}"),
                server: "fx".into(),
                tool: t.to_string(),
                description: String::new(),
                visible: *t == "echo",
                ui: None,
            })
            .collect();
        app.handle_key(key(KeyCode::Enter));
        assert_eq!(
            app.handle_key(key(KeyCode::Char('e'))),
            [Effect::SetEnabled("fx".into(), false)]
        );
        app.data.servers[0].state = ServerState::Disabled;
        assert_eq!(
            app.handle_key(key(KeyCode::Char('e'))),
            [Effect::SetEnabled("fx".into(), true)]
        );
        assert_eq!(
            app.handle_key(key(KeyCode::Char('o'))),
            [Effect::SetStart("fx".into(), Start::on_demand())]
        );
        app.data.servers[0].start = Start::on_demand();
        assert_eq!(
            app.handle_key(key(KeyCode::Char('o'))),
            [Effect::SetStart("fx".into(), Start::Launch)]
        );
        app.handle_key(key(KeyCode::Char('t')));
        let hide = Effect::SetVisible {
            server: "fx".into(),
            tool: Some("echo".into()),
            visible: false,
        };
        assert_eq!(app.handle_key(key(KeyCode::Char('v'))), [hide]);
        app.handle_key(key(KeyCode::Down));
        let show = Effect::SetVisible {
            server: "fx".into(),
            tool: Some("env".into()),
            visible: true,
        };
        assert_eq!(app.handle_key(key(KeyCode::Char('v'))), [show]);
        let all = Effect::SetVisible {
            server: "fx".into(),
            tool: None,
            visible: false,
        };
        assert_eq!(app.handle_key(key(KeyCode::Char('V'))), [all]);
    }

    fn wizard(app: &App) -> &Wizard {
        match &app.screen {
            Screen::Add(w) => w,
            other => panic!("not the wizard: {other:?}"),
        }
    }

    #[test]
    fn the_wizard_refuses_bad_input_on_its_step() {
        let mut app = app_with(&["fx"]);
        app.handle_key(key(KeyCode::Char('a')));
        for (name, why) in [
            ("", "give the server a name"),
            ("fx", "already configured"),
            ("a b", "is not valid: use letters"),
        ] {
            app.handle_key(KeyEvent::new(KeyCode::Char('u'), KeyModifiers::CONTROL));
            typed(&mut app, name);
            app.handle_key(key(KeyCode::Enter));
            let w = wizard(&app);
            assert_eq!(w.step, Step::Name);
            assert!(w.error.as_deref().unwrap().contains(why), "{:?}", w.error);
        }
        app.handle_key(KeyEvent::new(KeyCode::Char('u'), KeyModifiers::CONTROL));
        typed(&mut app, "web");
        app.handle_key(key(KeyCode::Enter));
        app.handle_key(key(KeyCode::Down));
        app.handle_key(key(KeyCode::Enter));
        assert_eq!(wizard(&app).step, Step::Url);
        typed(&mut app, "ftp://x");
        app.handle_key(key(KeyCode::Enter));
        assert!(wizard(&app).error.as_deref().unwrap().contains("http://"));
        app.handle_key(KeyEvent::new(KeyCode::Char('u'), KeyModifiers::CONTROL));
        typed(&mut app, "https://h.test/mcp");
        app.handle_key(key(KeyCode::Enter));
        typed(&mut app, "no colon");
        app.handle_key(key(KeyCode::Enter));
        assert!(
            wizard(&app)
                .error
                .as_deref()
                .unwrap()
                .contains("Name: value")
        );
        app.handle_key(KeyEvent::new(KeyCode::Char('u'), KeyModifiers::CONTROL));
        typed(&mut app, "X-Key: s3cret");
        app.handle_key(key(KeyCode::Enter));
        app.handle_key(key(KeyCode::Enter));
        assert_eq!(wizard(&app).step, Step::Auth);
        app.handle_key(key(KeyCode::Down));
        app.handle_key(key(KeyCode::Enter));
        assert_eq!(wizard(&app).step, Step::Timeouts);
        for (bad, why) in [
            (
                "0",
                "\"timeout\" is 0; it must be a number of seconds above 0",
            ),
            ("soon", "\"timeout\" is \"soon\""),
            ("30 90000", "\"startup_timeout\" is 90000;"),
            ("1 2 3", "at most two numbers"),
        ] {
            app.handle_key(KeyEvent::new(KeyCode::Char('u'), KeyModifiers::CONTROL));
            typed(&mut app, bad);
            app.handle_key(key(KeyCode::Enter));
            let w = wizard(&app);
            assert_eq!(w.step, Step::Timeouts, "{bad}");
            assert!(
                w.error.as_deref().unwrap().contains(why),
                "{bad}: {:?}",
                w.error
            );
        }
        app.handle_key(KeyEvent::new(KeyCode::Char('u'), KeyModifiers::CONTROL));
        typed(&mut app, "120 2.5");
        app.handle_key(key(KeyCode::Enter));
        assert_eq!(wizard(&app).step, Step::Summary);
        let effects = app.handle_key(key(KeyCode::Enter));
        let Effect::Add { name, server } = &effects[0] else {
            panic!("{effects:?}")
        };
        assert_eq!(name, "web");
        assert_eq!(
            server.to_value(),
            json!({"url": "https://h.test/mcp", "headers": {"X-Key": "s3cret"}, "auth": "oauth",
                   "timeout": 120, "startup_timeout": 2.5})
        );
        // A refusal from the save is shown on the summary; nothing more is sent.
        app.apply(Update::Finished {
            server: "web".into(),
            job: Job::Saving,
            outcome: Err("a server named \"web\" is already in the config".into()),
        });
        let w = wizard(&app);
        assert!(!w.saving && w.error.as_deref().unwrap().contains("already"));
        assert!(app.jobs.is_empty());
    }

    #[test]
    fn one_job_per_server_and_a_bound_on_all() {
        let mut app = app_with(&["fx"]);
        app.handle_key(key(KeyCode::Enter));
        assert_eq!(
            app.handle_key(key(KeyCode::Char('r'))),
            [Effect::Reconnect("fx".into())]
        );
        assert!(app.handle_key(key(KeyCode::Char('r'))).is_empty());
        assert!(app.notice.as_ref().unwrap().text.contains("busy"));
        for i in 0..MAX_JOBS {
            app.jobs.insert(format!("s{i}"), Job::Connecting);
        }
        app.jobs.remove("fx");
        assert!(app.handle_key(key(KeyCode::Char('r'))).is_empty());
        assert!(app.notice.as_ref().unwrap().text.contains("too much"));
    }

    #[test]
    fn login_screen_keys() {
        let mut app = app_with(&["py"]);
        app.data.oauth.insert("py".into(), OAuthInfo::default());
        app.handle_key(key(KeyCode::Enter));
        assert_eq!(
            app.handle_key(key(KeyCode::Char('l'))),
            [Effect::Login("py".into())]
        );
        app.apply(Update::LoginUrl(
            "py".into(),
            "http://as.test/authorize?x=1".into(),
        ));
        assert!(matches!(&app.screen, Screen::Login { url: Some(u), .. } if u.contains("as.test")));
        // p opens the paste field; Esc closes it, the login goes on.
        app.handle_key(key(KeyCode::Char('p')));
        typed(&mut app, "half");
        app.handle_key(key(KeyCode::Esc));
        assert!(matches!(
            &app.screen,
            Screen::Login {
                paste: None,
                state: LoginState::Waiting,
                ..
            }
        ));
        app.handle_key(key(KeyCode::Char('p')));
        app.handle_paste("http://localhost:17988/callback?code=c&state=s");
        assert_eq!(
            app.handle_key(key(KeyCode::Enter)),
            [Effect::Paste {
                name: "py".into(),
                url: "http://localhost:17988/callback?code=c&state=s".into()
            }]
        );
        app.apply(Update::PasteRefused("py".into(), "no code=".into()));
        assert!(matches!(&app.screen, Screen::Login { error: Some(e), .. } if e == "no code="));
        // Esc while waiting cancels; the job ends with it.
        assert_eq!(
            app.handle_key(key(KeyCode::Esc)),
            [Effect::CancelLogin("py".into())]
        );
        assert!(matches!(&app.screen, Screen::Server(n) if n == "py"));
        // A login that ends: Enter goes back; a release of a key does nothing.
        app.jobs.clear();
        app.handle_key(key(KeyCode::Char('l')));
        app.apply(Update::LoginDone("py".into(), Ok(None)));
        assert!(app.jobs.is_empty());
        let mut release = key(KeyCode::Enter);
        release.kind = KeyEventKind::Release;
        assert!(app.handle_key(release).is_empty());
        assert!(matches!(
            &app.screen,
            Screen::Login {
                state: LoginState::Done(Ok(None)),
                ..
            }
        ));
        app.handle_key(key(KeyCode::Enter));
        assert!(matches!(&app.screen, Screen::Server(n) if n == "py"));
    }

    #[test]
    fn instructions_scroll_and_the_client_form_sends_what_was_typed() {
        let mut app = app_with(&["py"]);
        app.data.oauth.insert("py".into(), OAuthInfo::default());
        app.handle_key(key(KeyCode::Enter));
        app.handle_key(key(KeyCode::Char('i')));
        for (code, scroll) in [
            (KeyCode::Down, 1),
            (KeyCode::Char('j'), 2),
            (KeyCode::PageDown, 12),
            (KeyCode::PageUp, 2),
            (KeyCode::Char('k'), 1),
            (KeyCode::Up, 0),
            (KeyCode::Up, 0),
        ] {
            app.handle_key(key(code));
            assert!(
                matches!(app.screen, Screen::Instructions { scroll: s, .. } if s == scroll),
                "{code:?}"
            );
        }
        app.handle_key(key(KeyCode::Esc));
        app.handle_key(key(KeyCode::Char('c')));
        typed(&mut app, "id-1");
        app.handle_key(key(KeyCode::Enter));
        app.handle_paste("s3cret");
        app.handle_key(key(KeyCode::Enter));
        let effects = app.handle_key(key(KeyCode::Enter));
        assert_eq!(
            effects,
            [Effect::SetClient {
                name: "py".into(),
                client: OAuthClient {
                    client_id: "id-1".into(),
                    client_secret: Some("s3cret".into()),
                    redirect_uri: None,
                },
            }]
        );
        // Keys wait while it saves; a refusal shows on the form.
        assert!(app.handle_key(key(KeyCode::Enter)).is_empty());
        app.apply(Update::ClientSaved("py".into(), Err("bad uri".into())));
        assert!(
            matches!(&app.screen, Screen::Client { form, .. } if form.error.as_deref() == Some("bad uri") && !form.saving)
        );
    }

    /// The catalog's pages, through App.
    mod catalog_pages {
        use super::*;
        use crate::host::Catalog;
        use crate::protocol::items::{CompletionRef, Prompt, Resource, ResourceTemplate};

        fn app_with_catalog() -> App {
            let mut app = App::new(Snapshot::default());
            // Read from text, as from a server (their members are kept as text).
            let resource: Resource =
                serde_json::from_str(r#"{"uri": "fixture://readme", "name": "readme"}"#).unwrap();
            let template: ResourceTemplate =
                serde_json::from_str(r#"{"uriTemplate": "fixture://big/{bytes}", "name": "big"}"#)
                    .unwrap();
            let greet: Prompt = serde_json::from_str(
                r#"{"name": "greet", "arguments": [{"name": "name", "required": true}, {"name": "style"}]}"#,
            )
            .unwrap();
            app.data.catalog = Some(CatalogView {
                server: "fx".into(),
                catalog: Catalog {
                    resources: vec![resource],
                    templates: vec![template],
                    prompts: vec![greet],
                    skills: vec![],
                },
                completions: true,
            });
            app.screen = Screen::Server("fx".into());
            app
        }

        fn typed(app: &mut App, text: &str) -> Vec<Effect> {
            let mut effects = Vec::new();
            for c in text.chars() {
                effects = app.handle_key(key(KeyCode::Char(c)));
            }
            effects
        }

        #[test]
        fn a_resource_is_read_and_a_template_asks_for_its_variables() {
            let mut app = app_with_catalog();
            app.handle_key(key(KeyCode::Char('R')));
            let effects = app.handle_key(key(KeyCode::Enter));
            assert_eq!(
                effects,
                [Effect::ReadResource {
                    ticket: 1,
                    server: "fx".into(),
                    uri: "fixture://readme".into()
                }]
            );
            // An output that is not the screen's is dropped; the screen's is shown.
            app.apply(Update::Output {
                ticket: 9,
                outcome: Ok("stale".into()),
            });
            app.apply(Update::Output {
                ticket: 1,
                outcome: Ok("The readme.".into()),
            });
            assert!(matches!(&app.screen, Screen::Catalog(Page::Output(o))
                if o.text == Some(Ok("The readme.".into())) && o.title == "fixture://readme"));
            assert_eq!(app.fetches.fetching, 0);
            app.handle_key(key(KeyCode::Esc));
            app.handle_key(key(KeyCode::Down));
            // The template: its one variable, completed as typed; ↓ and Enter take a value.
            let effects = app.handle_key(key(KeyCode::Enter));
            assert!(
                matches!(&effects[..], [Effect::Complete { argument, value, .. }]
                if argument == "bytes" && value.is_empty())
            );
            // Typed while that request is out: asked again once it is answered.
            assert!(typed(&mut app, "1").is_empty());
            let effects = app.apply(Update::Completed {
                ticket: 2,
                outcome: Ok(vec!["1024".into(), "2048".into()]),
            });
            let Effect::Complete { ticket, value, .. } = &effects[0] else {
                panic!("{effects:?}")
            };
            assert_eq!(value, "1");
            app.apply(Update::Completed {
                ticket: *ticket,
                outcome: Ok(vec!["1024".into(), "1048576".into()]),
            });
            app.handle_key(key(KeyCode::Down));
            app.handle_key(key(KeyCode::Down));
            app.handle_key(key(KeyCode::Down));
            let Screen::Catalog(Page::Arguments(form)) = &app.screen else {
                panic!("{:?}", app.screen)
            };
            assert_eq!(form.chosen, Some(1));
            app.handle_key(key(KeyCode::Enter));
            let Screen::Catalog(Page::Arguments(form)) = &app.screen else {
                panic!("{:?}", app.screen)
            };
            assert_eq!(form.args[0].input.text(), "1048576");
            app.fetches.completing = false;
            let effects = app.handle_key(key(KeyCode::Enter));
            assert!(matches!(&effects[..], [Effect::ReadResource { uri, .. }]
                if uri == "fixture://big/1048576"));
        }

        #[test]
        fn a_prompt_asks_for_its_required_arguments() {
            let mut app = app_with_catalog();
            app.handle_key(key(KeyCode::Char('P')));
            app.handle_key(key(KeyCode::Enter));
            app.fetches.completing = false;
            // Tab to style, typed; Enter: the name is required, the focus goes back to it.
            app.handle_key(key(KeyCode::Tab));
            app.fetches.completing = false;
            typed(&mut app, "formal");
            app.fetches.completing = false;
            assert!(app.handle_key(key(KeyCode::Enter)).is_empty());
            let Screen::Catalog(Page::Arguments(form)) = &app.screen else {
                panic!("{:?}", app.screen)
            };
            assert_eq!(form.field, 0);
            assert_eq!(form.error.as_deref(), Some("give name: it is required"));
            // The name's completions carry the style as context.
            let effects = typed(&mut app, "A");
            assert!(
                matches!(&effects[..], [Effect::Complete { context, reference, .. }]
                if context == &[("style".to_string(), "formal".to_string())]
                    && *reference == CompletionRef::Prompt("greet".into()))
            );
            app.fetches.completing = false;
            assert_eq!(
                app.handle_key(key(KeyCode::Enter)),
                [Effect::GetPrompt {
                    ticket: app.fetches.ticket,
                    server: "fx".into(),
                    prompt: "greet".into(),
                    arguments: serde_json::json!({"name": "A", "style": "formal"}),
                }]
            );
            // Esc on the output goes back to the prompts.
            app.handle_key(key(KeyCode::Esc));
            assert!(matches!(
                &app.screen,
                Screen::Catalog(Page::Prompts { selected: 0, .. })
            ));
        }

        #[test]
        fn a_call_takes_a_json_object() {
            let mut app = app_with_catalog();
            app.data.tools = vec![ToolRow {
                name: "mcp__fx__echo".into(),
                server: "fx".into(),
                tool: "echo".into(),
                description: String::new(),
                visible: true,
                ui: None,
            }];
            app.handle_key(key(KeyCode::Char('t')));
            app.handle_key(key(KeyCode::Enter));
            assert!(
                matches!(&app.screen, Screen::Catalog(Page::Call(f)) if f.input.text().is_empty())
            );
            typed(&mut app, "[1]");
            assert!(app.handle_key(key(KeyCode::Enter)).is_empty());
            assert!(matches!(&app.screen, Screen::Catalog(Page::Call(f))
                if f.error.as_deref() == Some("the arguments must be a JSON object")));
            app.handle_key(KeyEvent::new(KeyCode::Char('u'), KeyModifiers::CONTROL));
            typed(&mut app, r#"{"text": "hi"}"#);
            let effects = app.handle_key(key(KeyCode::Enter));
            assert_eq!(
                effects,
                [Effect::CallTool {
                    ticket: 1,
                    name: "mcp__fx__echo".into(),
                    arguments: serde_json::json!({"text": "hi"}),
                }]
            );
            // At most MAX_JOBS outputs run at once.
            app.fetches.fetching = MAX_JOBS;
            app.handle_key(key(KeyCode::Esc));
            app.handle_key(key(KeyCode::Enter));
            assert!(app.handle_key(key(KeyCode::Enter)).is_empty());
            assert!(app.notice.as_ref().unwrap().text.contains("too much"));
        }
    }

    /// The servers' requests, over the screens.
    mod requests {
        use super::*;
        use crate::host::Reply;
        use crate::tui::form::tests::{asking, typed};
        use crate::tui::form::{Ask, FieldValue};
        use serde_json::json;

        #[test]
        fn a_request_opens_over_the_screen_and_takes_the_keys_until_answered() {
            let mut app = App::new(Snapshot::default());
            let question = |id: &str| {
                let mut a = asking(
                    json!({"message": "Who?", "requestedSchema": {"type": "object",
                    "properties": {"name": {"type": "string"}}, "required": ["name"]}}),
                );
                a.id = id.into();
                Box::new(a)
            };
            app.apply(Update::Asked(question("1")));
            app.apply(Update::Asked(question("1")));
            assert_eq!(app.asked.queue.len(), 1);
            // `q` goes into the form, not to the list under it.
            assert!(app.handle_key(key(KeyCode::Char('q'))).is_empty());
            assert!(!app.quit);
            let effects = app.handle_key(key(KeyCode::Enter));
            assert_eq!(
                effects,
                [Effect::Reply {
                    id: "1".into(),
                    reply: Reply::Accept(json!({"name": "q"})),
                    open: None
                }]
            );
            // A refusal stays on the form; a taken answer closes it.
            let invalid = crate::host::ReplyError::Invalid("no".into());
            app.apply(Update::Replied {
                id: "1".into(),
                outcome: Err(invalid),
            });
            assert_eq!(app.asked.queue[0].error.as_deref(), Some("no"));
            app.apply(Update::Replied {
                id: "1".into(),
                outcome: Ok(()),
            });
            assert!(app.asked.queue.is_empty());
            assert_eq!(app.notice.as_ref().unwrap().text, "answered fx's request");
            // After a lag, the board's list: gone ones leave, kept ones keep what was typed.
            app.apply(Update::Asked(question("2")));
            app.apply(Update::Asked(question("3")));
            typed(&mut app.asked.queue[1], "Ada");
            app.apply(Update::Waiting(vec![*question("3")]));
            assert_eq!(app.asked.queue.len(), 1);
            let Ask::Form(state) = &app.asked.queue[0].what else {
                unreachable!()
            };
            assert!(matches!(&state.values[0], FieldValue::Text(i) if i.text() == "Ada"));
            app.apply(Update::RequestEnded {
                id: "3".into(),
                reason: "it expired".into(),
            });
            assert!(app.asked.queue.is_empty());
            assert_eq!(
                app.notice.as_ref().unwrap().text,
                "fx's request ended: it expired"
            );
            app.handle_key(key(KeyCode::Char('q')));
            assert!(app.quit);
        }
    }
}
